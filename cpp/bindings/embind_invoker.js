// Embind's JavaScript invoker of each bound function, made without evaluating a string: a
// --js-library (CMakeLists.txt, WA_MODULE_LINK) whose craftInvokerFunction replaces
// Emscripten 3.1.6's (src/embind/embind.js). Theirs compiles each invoker with new Function,
// which a Content-Security-Policy without 'unsafe-eval' refuses, or else returns one slow
// generic closure (web/docs/loading.md, "Content-Security-Policy and extensions"). This one does
// what the generated invoker does, in the same order, with no string:
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
// One function per arity (0 to 11, the most cpp/bindings/embind.cpp binds), each argument at a
// call site of its own, so each site's type feedback sees few types. Class methods and more
// than 11 arguments are refused at registration (embind.cpp binds neither).

/* global mergeInto, LibraryManager, throwBindingError, runDestructors */ // Emscripten's library scope
mergeInto(LibraryManager.library, {
  $craftInvokerFunction__deps: ['$throwBindingError', '$runDestructors'],
  $craftInvokerFunction: function (humanName, argTypes, classType, cppInvokerFunc, cppTargetFunc) {
    var argCount = argTypes.length;
    if (argCount < 2) {
      throwBindingError("argTypes array size mismatch! Must at least get return value and 'this' types!");
    }
    var n = argCount - 2;
    if ((argTypes[1] !== null && classType !== null) || n > 11) {
      throwBindingError(
        'craftInvokerFunction: ' +
          humanName +
          ' is a class method or takes over 11 arguments (cpp/bindings/embind_invoker.js)',
      );
    }
    var types = argTypes.slice(2);
    var retType = argTypes[0];
    var returns = retType.name !== 'void';
    // A type without a destructorFunction (undefined, not null) pushes its cleanups on a stack.
    var needsDestructorStack = types.some(function (t) {
      return t !== null && t.destructorFunction === undefined;
    });
    // -> argument i's destructor, where it has one and there is no stack; else null
    var dtor = function (i) {
      return i < n && !needsDestructorStack ? types[i].destructorFunction : null;
    };
    var enter = function (count) {
      if (count !== n) {
        throwBindingError('function ' + humanName + ' called with ' + count + ' arguments, expected ' + n + ' args!');
      }
      return needsDestructorStack ? [] : null;
    };
    var leave = function (rv) {
      return returns ? retType.fromWireType(rv) : undefined;
    };
    var fn = cppTargetFunc;
    var f = cppInvokerFunc;
    // argument i: its type, and its destructor (null: it has none, or the stack runs it)
    var t0 = types[0],
      t1 = types[1],
      t2 = types[2],
      t3 = types[3],
      t4 = types[4],
      t5 = types[5],
      t6 = types[6],
      t7 = types[7],
      t8 = types[8],
      t9 = types[9],
      t10 = types[10];
    var x0 = dtor(0),
      x1 = dtor(1),
      x2 = dtor(2),
      x3 = dtor(3),
      x4 = dtor(4),
      x5 = dtor(5),
      x6 = dtor(6),
      x7 = dtor(7),
      x8 = dtor(8),
      x9 = dtor(9),
      x10 = dtor(10);
    return [
      function () {
        enter(arguments.length);
        var rv = f(fn);
        return leave(rv);
      },
      function (a0) {
        var d = enter(arguments.length);
        var w0 = t0.toWireType(d, a0);
        var rv = f(fn, w0);
        if (d) runDestructors(d);
        else {
          if (x0) x0(w0);
        }
        return leave(rv);
      },
      function (a0, a1) {
        var d = enter(arguments.length);
        var w0 = t0.toWireType(d, a0);
        var w1 = t1.toWireType(d, a1);
        var rv = f(fn, w0, w1);
        if (d) runDestructors(d);
        else {
          if (x0) x0(w0);
          if (x1) x1(w1);
        }
        return leave(rv);
      },
      function (a0, a1, a2) {
        var d = enter(arguments.length);
        var w0 = t0.toWireType(d, a0);
        var w1 = t1.toWireType(d, a1);
        var w2 = t2.toWireType(d, a2);
        var rv = f(fn, w0, w1, w2);
        if (d) runDestructors(d);
        else {
          if (x0) x0(w0);
          if (x1) x1(w1);
          if (x2) x2(w2);
        }
        return leave(rv);
      },
      function (a0, a1, a2, a3) {
        var d = enter(arguments.length);
        var w0 = t0.toWireType(d, a0);
        var w1 = t1.toWireType(d, a1);
        var w2 = t2.toWireType(d, a2);
        var w3 = t3.toWireType(d, a3);
        var rv = f(fn, w0, w1, w2, w3);
        if (d) runDestructors(d);
        else {
          if (x0) x0(w0);
          if (x1) x1(w1);
          if (x2) x2(w2);
          if (x3) x3(w3);
        }
        return leave(rv);
      },
      function (a0, a1, a2, a3, a4) {
        var d = enter(arguments.length);
        var w0 = t0.toWireType(d, a0);
        var w1 = t1.toWireType(d, a1);
        var w2 = t2.toWireType(d, a2);
        var w3 = t3.toWireType(d, a3);
        var w4 = t4.toWireType(d, a4);
        var rv = f(fn, w0, w1, w2, w3, w4);
        if (d) runDestructors(d);
        else {
          if (x0) x0(w0);
          if (x1) x1(w1);
          if (x2) x2(w2);
          if (x3) x3(w3);
          if (x4) x4(w4);
        }
        return leave(rv);
      },
      function (a0, a1, a2, a3, a4, a5) {
        var d = enter(arguments.length);
        var w0 = t0.toWireType(d, a0);
        var w1 = t1.toWireType(d, a1);
        var w2 = t2.toWireType(d, a2);
        var w3 = t3.toWireType(d, a3);
        var w4 = t4.toWireType(d, a4);
        var w5 = t5.toWireType(d, a5);
        var rv = f(fn, w0, w1, w2, w3, w4, w5);
        if (d) runDestructors(d);
        else {
          if (x0) x0(w0);
          if (x1) x1(w1);
          if (x2) x2(w2);
          if (x3) x3(w3);
          if (x4) x4(w4);
          if (x5) x5(w5);
        }
        return leave(rv);
      },
      function (a0, a1, a2, a3, a4, a5, a6) {
        var d = enter(arguments.length);
        var w0 = t0.toWireType(d, a0);
        var w1 = t1.toWireType(d, a1);
        var w2 = t2.toWireType(d, a2);
        var w3 = t3.toWireType(d, a3);
        var w4 = t4.toWireType(d, a4);
        var w5 = t5.toWireType(d, a5);
        var w6 = t6.toWireType(d, a6);
        var rv = f(fn, w0, w1, w2, w3, w4, w5, w6);
        if (d) runDestructors(d);
        else {
          if (x0) x0(w0);
          if (x1) x1(w1);
          if (x2) x2(w2);
          if (x3) x3(w3);
          if (x4) x4(w4);
          if (x5) x5(w5);
          if (x6) x6(w6);
        }
        return leave(rv);
      },
      function (a0, a1, a2, a3, a4, a5, a6, a7) {
        var d = enter(arguments.length);
        var w0 = t0.toWireType(d, a0);
        var w1 = t1.toWireType(d, a1);
        var w2 = t2.toWireType(d, a2);
        var w3 = t3.toWireType(d, a3);
        var w4 = t4.toWireType(d, a4);
        var w5 = t5.toWireType(d, a5);
        var w6 = t6.toWireType(d, a6);
        var w7 = t7.toWireType(d, a7);
        var rv = f(fn, w0, w1, w2, w3, w4, w5, w6, w7);
        if (d) runDestructors(d);
        else {
          if (x0) x0(w0);
          if (x1) x1(w1);
          if (x2) x2(w2);
          if (x3) x3(w3);
          if (x4) x4(w4);
          if (x5) x5(w5);
          if (x6) x6(w6);
          if (x7) x7(w7);
        }
        return leave(rv);
      },
      function (a0, a1, a2, a3, a4, a5, a6, a7, a8) {
        var d = enter(arguments.length);
        var w0 = t0.toWireType(d, a0);
        var w1 = t1.toWireType(d, a1);
        var w2 = t2.toWireType(d, a2);
        var w3 = t3.toWireType(d, a3);
        var w4 = t4.toWireType(d, a4);
        var w5 = t5.toWireType(d, a5);
        var w6 = t6.toWireType(d, a6);
        var w7 = t7.toWireType(d, a7);
        var w8 = t8.toWireType(d, a8);
        var rv = f(fn, w0, w1, w2, w3, w4, w5, w6, w7, w8);
        if (d) runDestructors(d);
        else {
          if (x0) x0(w0);
          if (x1) x1(w1);
          if (x2) x2(w2);
          if (x3) x3(w3);
          if (x4) x4(w4);
          if (x5) x5(w5);
          if (x6) x6(w6);
          if (x7) x7(w7);
          if (x8) x8(w8);
        }
        return leave(rv);
      },
      function (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9) {
        var d = enter(arguments.length);
        var w0 = t0.toWireType(d, a0);
        var w1 = t1.toWireType(d, a1);
        var w2 = t2.toWireType(d, a2);
        var w3 = t3.toWireType(d, a3);
        var w4 = t4.toWireType(d, a4);
        var w5 = t5.toWireType(d, a5);
        var w6 = t6.toWireType(d, a6);
        var w7 = t7.toWireType(d, a7);
        var w8 = t8.toWireType(d, a8);
        var w9 = t9.toWireType(d, a9);
        var rv = f(fn, w0, w1, w2, w3, w4, w5, w6, w7, w8, w9);
        if (d) runDestructors(d);
        else {
          if (x0) x0(w0);
          if (x1) x1(w1);
          if (x2) x2(w2);
          if (x3) x3(w3);
          if (x4) x4(w4);
          if (x5) x5(w5);
          if (x6) x6(w6);
          if (x7) x7(w7);
          if (x8) x8(w8);
          if (x9) x9(w9);
        }
        return leave(rv);
      },
      function (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10) {
        var d = enter(arguments.length);
        var w0 = t0.toWireType(d, a0);
        var w1 = t1.toWireType(d, a1);
        var w2 = t2.toWireType(d, a2);
        var w3 = t3.toWireType(d, a3);
        var w4 = t4.toWireType(d, a4);
        var w5 = t5.toWireType(d, a5);
        var w6 = t6.toWireType(d, a6);
        var w7 = t7.toWireType(d, a7);
        var w8 = t8.toWireType(d, a8);
        var w9 = t9.toWireType(d, a9);
        var w10 = t10.toWireType(d, a10);
        var rv = f(fn, w0, w1, w2, w3, w4, w5, w6, w7, w8, w9, w10);
        if (d) runDestructors(d);
        else {
          if (x0) x0(w0);
          if (x1) x1(w1);
          if (x2) x2(w2);
          if (x3) x3(w3);
          if (x4) x4(w4);
          if (x5) x5(w5);
          if (x6) x6(w6);
          if (x7) x7(w7);
          if (x8) x8(w8);
          if (x9) x9(w9);
          if (x10) x10(w10);
        }
        return leave(rv);
      },
    ][n];
  },
});
