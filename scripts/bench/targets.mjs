// The performance targets of the issue, checked on one run's figures (ratios measured side
// by side, never absolute times): -> [{ target, value, goal, unit, ok }] (ok null: not measured).

// Median time of a case for an implementation, or null when the row did not run.
function finder(rows) {
  return (caseId, impl) => rows.find((r) => r.case === caseId && r.impl === impl && r.status === 'ok') ?? null;
}

export function checkTargets({ rows, peak, startup, sizes }) {
  const row = finder(rows);
  const faster = (ours, other) => (ours && other ? other.ms / ours.ms : null); // > 1: ours faster
  const targets = [];
  const add = (target, value, goal, unit = '×') =>
    targets.push({ target, value, goal, unit, ok: value == null ? null : value >= goal });

  const m1 = row('matmul', 'ours-1'),
    m2 = row('matmul', 'ours-2');
  add(
    'matmul 512³, 1 thread: share of the measured SIMD peak',
    m1 && peak ? (100 * m1.gflops) / peak.perCoreGflops : null,
    88,
    '%',
  );
  add('matmul 512³, 1 thread: faster than tfjs-wasm', faster(m1, row('matmul', 'tfjs-1')), 1.25);
  add('matmul 512³, 1 thread: faster than onnxruntime-web', faster(m1, row('matmul', 'ort-1')), 1.25);
  add('matmul 512³: 2 threads over our 1 thread', faster(m2, m1), 1.85);
  add('multi-head attention: 2 threads over our 1 thread', faster(row('mha', 'ours-2'), row('mha', 'ours-1')), 1.85);

  // relaxed SIMD's fused multiply-add against our SIMD128 build, same run, 1 thread (issue 11):
  // GEMM ≥ 1.5× where the CPU has FMA; attention and multi-head must gain with it
  const relaxed = (id) => faster(row(id, 'ours-relaxed-1'), row(id, 'ours-1'));
  add('matmul 512³, 1 thread: relaxed SIMD over our SIMD128', relaxed('matmul'), 1.5);
  add('attention n=512 d=64, 1 thread: relaxed SIMD over our SIMD128', relaxed('attention'), 1);
  add('multi-head attention, 1 thread: relaxed SIMD over our SIMD128', relaxed('mha'), 1);

  const a1 = row('attention', 'ours-1');
  const peerBest = [row('attention', 'tfjs-1'), row('attention', 'ort-1')]
    .filter(Boolean)
    .sort((x, y) => x.ms - y.ms)[0];
  add('attention n=512 d=64, 1 thread: faster than the faster of tfjs and onnxruntime', faster(a1, peerBest), 1.15);
  const h1 = row('mha', 'ours-1');
  add('multi-head attention, 1 thread: faster than onnxruntime-web', faster(h1, row('mha', 'ort-1')), 1.25);
  add("multi-head attention, 1 thread: faster than tfjs's best formulation", faster(h1, row('mha', 'tfjs-1')), 1.6);

  // backward GFLOP/s (nominal 2× the forward's FLOPs) over the forward's, same shape, 1 thread
  const ratio = (bwd, fwd) => (bwd && fwd ? bwd.gflops / fwd.gflops : null);
  add('attention backward GFLOP/s over its forward', ratio(row('attention-bwd', 'ours-1'), a1), 0.7);
  add(
    'causal attention backward GFLOP/s over its forward',
    ratio(row('attention-causal-bwd', 'ours-1'), row('attention-causal', 'ours-1')),
    0.7,
  );
  add('multi-head backward alone GFLOP/s over its forward', ratio(row('mha-bwd-only', 'ours-1'), h1), 0.7);
  add(
    'causal multi-head backward alone GFLOP/s over its forward',
    ratio(row('mha-causal-bwd-only', 'ours-1'), row('mha-causal', 'ours-1')),
    0.7,
  );

  if (startup?.length) {
    const ready = (impl, threads) =>
      startup.find((s) => s.impl === impl && s.threads === threads && !s.error)?.totalMs ?? null;
    const ours2 = ready('ours', 2);
    add(
      "ready module, 2 threads: faster than tfjs-wasm's threaded init",
      ours2 && ready('tfjs', 2) ? ready('tfjs', 2) / ours2 : null,
      1,
    );
    add(
      "ready module, 2 threads: faster than onnxruntime-web's first session",
      ours2 && ready('ort', 2) ? ready('ort', 2) / ours2 : null,
      1,
    );
  }
  if (sizes) {
    const largest = Math.max(...sizes.ours.map((s) => s.bytes));
    targets.push({
      target: 'each .wasm under 250 KB',
      value: largest / 1024,
      goal: 250,
      unit: 'KB (largest)',
      ok: largest < 250 * 1024,
    });
  }
  return targets;
}

// machine: results.machine, to name what the targets were measured on.
export function renderTargets(targets, machine) {
  const where = machine
    ? `, ${machine.browser ? `${machine.browser} on ` : ''}${machine.cpuModel ?? 'an unknown CPU'}`
    : '';
  const lines = [`targets (from this run${where}):`];
  for (const t of targets) {
    const mark = t.ok == null ? 'n/a ' : t.ok ? 'met ' : 'MISS';
    const value = t.value == null ? 'not measured' : `${t.value.toFixed(t.unit === '%' ? 1 : 2)} ${t.unit}`;
    const goal = t.unit.startsWith('KB') ? `< ${t.goal} KB` : `>= ${t.goal} ${t.unit}`;
    lines.push(`  ${mark}  ${t.target}: ${value} (goal ${goal})`);
  }
  return lines.join('\n');
}
