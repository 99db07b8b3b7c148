// The machine's wasm SIMD peak in Node (the probe itself: peak_probe.mjs): one core, then one
// worker thread per core at once, summed.
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { measureOneThread, peakRecord, probeModule } from './peak_probe.mjs';

// One worker per core, all measuring at once: the sum of their rates.
async function measureAllCores(bytes, cores) {
  const source = `
    const { parentPort, workerData } = require('node:worker_threads');
    import(${JSON.stringify(new URL('./peak_probe.mjs', import.meta.url).href)}).then((m) => parentPort.postMessage(m.measureOneThread(workerData, 15)));`;
  const rates = await Promise.all(
    Array.from(
      { length: cores },
      () =>
        new Promise((resolve, reject) => {
          const w = new Worker(source, { eval: true, workerData: bytes });
          w.once('message', (rate) => {
            resolve(rate);
            w.terminate();
          });
          w.once('error', reject);
        }),
    ),
  );
  return rates.reduce((s, r) => s + r, 0);
}

// The FMA probe on one core, where this engine runs relaxed SIMD (Node 20: a V8 flag), else null.
// It alternates with the mul+add probe for a few rounds, each keeping its best: a neighbour that
// takes the core for a while then slows both alike instead of one of them.
async function measureOneCore() {
  const bytes = await probeModule();
  const fmaBytes = await probeModule({ fma: true });
  const fma = WebAssembly.validate(fmaBytes);
  let perCoreGflops = measureOneThread(bytes);
  let fmaPerCoreGflops = fma ? measureOneThread(fmaBytes) : null;
  for (let round = 0; fma && round < 2; ++round) {
    perCoreGflops = Math.max(perCoreGflops, measureOneThread(bytes, 5));
    fmaPerCoreGflops = Math.max(fmaPerCoreGflops, measureOneThread(fmaBytes, 5));
  }
  return { perCoreGflops, fmaPerCoreGflops };
}

export async function measurePeak() {
  const bytes = await probeModule();
  const cores = availableParallelism();
  const allCoresGflops = cores > 1 ? await measureAllCores(bytes, cores) : 0;
  return peakRecord({ ...(await measureOneCore()), allCoresGflops, cores });
}
