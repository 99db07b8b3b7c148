// What the numbers were measured on, saved with them: they mean little without it.
import { cpus, totalmem, availableParallelism, loadavg, release, platform, arch } from 'node:os';
import { readFileSync } from 'node:fs';

function cpuModel() {
  const fromOs = cpus()[0]?.model?.trim();
  if (fromOs) return fromOs;
  try {
    return /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

export function machineInfo() {
  const list = cpus();
  return {
    node: process.version,
    v8: process.versions.v8,
    platform: `${platform()} ${release()} ${arch()}`,
    cpuModel: cpuModel(),
    cpuMHz: list[0]?.speed || null,
    cores: availableParallelism(),
    memoryGB: +(totalmem() / 2 ** 30).toFixed(1),
    // the load when the run started: a busy machine makes every figure noisier
    loadAverage: loadavg().map((l) => +l.toFixed(2)),
  };
}
