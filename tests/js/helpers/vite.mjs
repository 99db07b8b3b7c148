// A project's own Vite server, for the suites that load apps through it.
//   withVite(dir, args, fn) -> fn(url)'s result: runs dir's node_modules/.bin/vite with args
//     (['preview'], or [] for the dev server) on a free port, calls fn with the URL it prints,
//     and stops it whatever fn does.
// The port: one free when asked, without --strictPort, so Vite moves on to the next if another
// process took it meanwhile (the URL read is the one Vite prints). Not --port 0: Vite 5's dev
// server reads 0 as unset and takes 5173.
import { spawn } from 'node:child_process';
import { join } from 'node:path';

import { freePort } from '../../../scripts/lib/browser.mjs';

export async function withVite(dir, args, fn) {
  const port = String(await freePort());
  const vite = spawn(process.execPath, [join(dir, 'node_modules/.bin/vite'), ...args, '--port', port], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    const url = await new Promise((resolve, reject) => {
      let out = '';
      vite.stdout.on('data', (d) => {
        out += d;
        // eslint-disable-next-line no-control-regex -- ESC starts the terminal colour codes Vite prints
        const m = /Local:\s+(http:\/\/\S+)/.exec(out.replace(/\x1b\[[0-9;]*m/g, ''));
        if (m) resolve(m[1]);
      });
      vite.on('exit', (code) => reject(new Error(`vite exited with ${code}: ${out}`)));
    });
    return await fn(url);
  } finally {
    vite.kill();
  }
}
