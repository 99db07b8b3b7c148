// Embind's JavaScript invoker of each bound function, made without evaluating a string: a
// --js-library (CMakeLists.txt, WA_MODULE_LINK) whose craftInvokerFunction replaces
// Emscripten 3.1.6's (src/embind/embind.js). Theirs, with DYNAMIC_EXECUTION=1, writes each
// invoker's source and compiles it with new Function, which a Content-Security-Policy without
// 'unsafe-eval' refuses; with DYNAMIC_EXECUTION=0 it returns one generic closure that reads
// `arguments`, spreads the wired arguments with apply() and makes a closure per call, which
// costs a small call ~20 % in V8 (web/docs/loading.md). This one does what the generated
// invoker does, in the same order, with no string:
//
//   function name(arg0, …, argN-1) {
//     if (arguments.length !== N) throwBindingError(…);
//     var destructors = [];                                   // only if a type needs the stack
//     var argIWired = argTypeI.toWireType(destructors or null, argI);   // each argument
//     var rv = invoker(fn, arg0Wired, …);                     // the C++ side
//     runDestructors(destructors)  or  argIWired_dtor(argIWired)  // each type that has one
//     return retType.fromWireType(rv);                       // unless it returns void
//   }
//
// The arguments arrive as a rest array, are wired in place, and reach the C++ side through a
// caller of fixed arity (up to 12 arguments; spread past that). Class methods (a `this` to
// wire) are not bound by this package (cpp/bindings/embind.cpp binds free functions and value
// objects): their invokers are refused at registration rather than made wrong.

/* global mergeInto, LibraryManager, throwBindingError, runDestructors */ // Emscripten's library scope
mergeInto(LibraryManager.library, {
  $craftInvokerFunction__deps: ['$throwBindingError', '$runDestructors'],
  $craftInvokerFunction: function (humanName, argTypes, classType, cppInvokerFunc, cppTargetFunc) {
    var argCount = argTypes.length;
    if (argCount < 2) {
      throwBindingError("argTypes array size mismatch! Must at least get return value and 'this' types!");
    }
    if (argTypes[1] !== null && classType !== null) {
      throwBindingError(
        'craftInvokerFunction: ' + humanName + ' is a class method, which cpp/bindings/embind_invoker.js does not make',
      );
    }
    var n = argCount - 2;
    var types = argTypes.slice(2);
    var retType = argTypes[0];
    var returns = retType.name !== 'void';
    // A type without a destructorFunction (undefined, not null) pushes its cleanups on a stack.
    var needsDestructorStack = types.some(function (t) {
      return t !== null && t.destructorFunction === undefined;
    });
    // Otherwise: the arguments whose type has a destructor, and it.
    var dtorAt = [];
    var dtors = [];
    if (!needsDestructorStack) {
      for (var i = 0; i < n; ++i) {
        if (types[i].destructorFunction !== null) {
          dtorAt.push(i);
          dtors.push(types[i].destructorFunction);
        }
      }
    }
    var fn = cppTargetFunc;
    var f = cppInvokerFunc;
    // wired (n values) -> invoker(fn, ...wired), at a fixed arity
    // prettier-ignore
    var call = [
      function (_w) { return f(fn); },
      function (w) { return f(fn, w[0]); },
      function (w) { return f(fn, w[0], w[1]); },
      function (w) { return f(fn, w[0], w[1], w[2]); },
      function (w) { return f(fn, w[0], w[1], w[2], w[3]); },
      function (w) { return f(fn, w[0], w[1], w[2], w[3], w[4]); },
      function (w) { return f(fn, w[0], w[1], w[2], w[3], w[4], w[5]); },
      function (w) { return f(fn, w[0], w[1], w[2], w[3], w[4], w[5], w[6]); },
      function (w) { return f(fn, w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]); },
      function (w) { return f(fn, w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8]); },
      function (w) { return f(fn, w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9]); },
      function (w) { return f(fn, w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9], w[10]); },
      function (w) { return f(fn, w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9], w[10], w[11]); },
    ][n] || function (w) { return f.apply(null, [fn].concat(w)); };
    return function (...args) {
      if (args.length !== n) {
        throwBindingError(
          'function ' + humanName + ' called with ' + args.length + ' arguments, expected ' + n + ' args!',
        );
      }
      var destructors = needsDestructorStack ? [] : null;
      for (var i = 0; i < n; ++i) args[i] = types[i].toWireType(destructors, args[i]);
      var rv = call(args);
      if (needsDestructorStack) runDestructors(destructors);
      else for (var j = 0; j < dtorAt.length; ++j) dtors[j](args[dtorAt[j]]);
      if (returns) return retType.fromWireType(rv);
    };
  },
});
