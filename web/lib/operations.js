// The worker form's operations: one row per member of the direct form that
// createAttention({ worker: true }) mirrors. worker_client.js makes its classes' members from
// these rows and worker_host.js its dispatch; a new method of Attention, MultiHeadAttention or
// KvCache is one row here (or one DIRECT_ONLY entry saying why the worker form lacks it),
// beside its direct implementation and its types (index.d.ts: the Async* types are mapped
// from the direct ones).
//
// Columns:
//   on       the class the member is on: 'attention' (Attention, what createAttention()
//            resolves to), 'layer' (MultiHeadAttention), 'cache' (KvCache)
//   name     the member's name, the same in both forms
//   form     'method': a call answered by the worker, a Promise here
//            'getter': a property read in the worker, a Promise here
//            'local':  a value the worker sent when the object was made (a layer's config, a
//                      cache's shape, the backend), read here with no request; checks: it
//                      throws once the instance was disposed, as the direct form's does;
//                      own: an own property of each object, as in the direct form (else a
//                      getter of the class)
//            'dispose': frees the object in the worker once the calls made before it ran
//   args     how many arguments are sent as given (those left out as undefined); a caller's
//            extra ones are not sent
//   options  what the argument after them is:
//            'options':  the direct form's options, sent with the worker form's transfer key
//                        taken out, and out replaced by a fresh array of its type and length
//                        (worker_client.js, takeOptions)
//            'transfer': the worker form's own { transfer }, read here, not sent
//            absent:     none (a call of this member never transfers)
//   out      with options.out, where the answer's main result is, whose values go into out:
//            'output' (answer.output) or 'answer' (the answer itself)
//   cacheOption  the options key that takes a KvCache in the direct form: here it takes a
//            cache of this form, sent as a reference to its cache in the worker (any cache of
//            this form among a call's arguments goes as one, so that a misplaced one gets the
//            direct form's message there)
//   hold     a call with out that changes the worker's state is held (the undo protocol,
//            worker_client.js): 'always' (a layer's forward replaces its saved forward), or
//            'cache' (when its cacheOption holds a cache of this form, which it appends to)
//   makes    the answer is a new object in the worker ('layer' or 'cache'), given here as a
//            proxy of this form holding its local values
//   returns  'arrays': the answer holds typed arrays, each a fresh copy out of wasm memory
//            that nobody in the worker keeps, so they are transferred back (detached there);
//            absent: nothing to transfer (numbers, undefined)
//   gone     a getter's value once its object or its instance was disposed (the direct
//            form's value then) instead of a rejection
export const OPERATIONS = Object.freeze(
  [
    { on: 'attention', name: 'backend', form: 'local', checks: true },
    {
      on: 'attention',
      name: 'attention',
      form: 'method',
      args: 3,
      options: 'options',
      out: 'output',
      hold: 'cache',
      cacheOption: 'cache',
      returns: 'arrays',
    },
    { on: 'attention', name: 'attentionBackward', form: 'method', args: 4, options: 'options', returns: 'arrays' },
    { on: 'attention', name: 'matmul', form: 'method', args: 2, options: 'options', out: 'answer', returns: 'arrays' },
    { on: 'attention', name: 'memory', form: 'method', args: 0 },
    { on: 'attention', name: 'kvCache', form: 'method', args: 1, makes: 'cache' },
    // config is the options argument: it may say { transfer: true }, for its weights
    { on: 'attention', name: 'multiHeadAttention', form: 'method', args: 0, options: 'options', makes: 'layer' },
    { on: 'attention', name: 'dispose', form: 'dispose' },

    { on: 'layer', name: 'config', form: 'local', own: true },
    {
      on: 'layer',
      name: 'forward',
      form: 'method',
      args: 1,
      options: 'options',
      out: 'output',
      hold: 'always',
      cacheOption: 'cache',
      returns: 'arrays',
    },
    { on: 'layer', name: 'backward', form: 'method', args: 1, options: 'transfer', returns: 'arrays' },
    { on: 'layer', name: 'step', form: 'method', args: 2, options: 'transfer' },
    { on: 'layer', name: 'weights', form: 'getter', returns: 'arrays' },
    { on: 'layer', name: 'dispose', form: 'dispose' },

    { on: 'cache', name: 'capacity', form: 'local' },
    { on: 'cache', name: 'batch', form: 'local' },
    { on: 'cache', name: 'kvHeads', form: 'local' },
    { on: 'cache', name: 'dK', form: 'local' },
    { on: 'cache', name: 'dV', form: 'local' },
    { on: 'cache', name: 'dtype', form: 'local' },
    { on: 'cache', name: 'length', form: 'getter', gone: 0 },
    { on: 'cache', name: 'read', form: 'method', args: 0, returns: 'arrays' },
    { on: 'cache', name: 'truncate', form: 'method', args: 1 },
    { on: 'cache', name: 'reset', form: 'method', args: 0 },
    { on: 'cache', name: 'dispose', form: 'dispose' },
  ].map((row) => Object.freeze({ ...row, op: `${row.on}.${row.name}` })),
);

// Members of the direct form the worker form does not have, 'on.name' -> why. Empty: the
// worker form has every public member.
export const DIRECT_ONLY = Object.freeze({});

// op ('layer.forward') -> its row: what a request names.
export const OPERATION = new Map(OPERATIONS.map((row) => [row.op, row]));

// The rows of one class's members, in the table's order.
export const operationsOn = (on) => OPERATIONS.filter((row) => row.on === on);
