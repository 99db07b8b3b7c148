// A static file server for web/ (or any folder: startServer({ root })) on localhost.
//
// By default every response carries the two headers that make the page cross-origin
// isolated, which browsers require before they hand out SharedArrayBuffer, and so threads:
//   Cross-Origin-Opener-Policy: same-origin
//   Cross-Origin-Embedder-Policy: require-corp
// --no-isolation leaves them out, as a plain static host would: the page then runs the
// single-thread build (the browser tests load it both ways).
//
// Serving web/ (the default root), it also serves what the browser benchmark (web/bench.html)
// needs from outside web/, read-only and nothing else:
//   /bench-src/                    scripts/bench/ (the bench's cases, implementations, report)
//   /vendor/                       build/bench-browser/ (scripts/bench/browser_bundles.mjs)
//   /vendor/onnxruntime-web/       onnxruntime-web's dist/ from build/bench-peers/
//   /vendor/tfjs-backend-wasm/     tfjs-backend-wasm's dist/ (its .wasm files)
// The peers are installed on the first `npm run bench` (scripts/bench/peers.mjs); until then
// those paths answer 404 and the page runs our rows only.
//
// usage: node scripts/serve.mjs [--port N] [--no-isolation] [--quiet] [--root DIR]
//        --root serves DIR instead of web/ (a built example app, say).
//        PORT in the environment works too; a busy port moves on to the next one.
// startServer({ headers }) adds headers to every response (a Content-Security-Policy, say:
// tests/js/engines/csp.test.mjs).
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const webRoot = fileURLToPath(new URL('../web', import.meta.url));
const repo = (path) => fileURLToPath(new URL(`../${path}`, import.meta.url));
const peers = 'build/bench-peers/node_modules';
// URL prefix -> folder, longest prefix first
const MOUNTS = [
  ['/vendor/onnxruntime-web/', repo(`${peers}/onnxruntime-web/dist`)],
  ['/vendor/tfjs-backend-wasm/', repo(`${peers}/@tensorflow/tfjs-backend-wasm/dist`)],
  ['/vendor/', repo('build/bench-browser')],
  ['/bench-src/', repo('scripts/bench')],
];

// URL path -> [folder, path inside it]
function locate(root, path) {
  if (root !== webRoot) return [root, path];
  const mount = MOUNTS.find(([prefix]) => path.startsWith(prefix));
  return mount ? [mount[1], path.slice(mount[0].length - 1)] : [root, path];
}

const types = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.bin': 'application/octet-stream',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
};

export function startServer({ port = 8080, isolation = true, quiet = false, root = webRoot, headers: extra } = {}) {
  root = resolve(root);
  const server = createServer(async (req, res) => {
    const headers = { 'Cache-Control': 'no-cache', ...extra };
    if (isolation) {
      headers['Cross-Origin-Opener-Policy'] = 'same-origin';
      headers['Cross-Origin-Embedder-Policy'] = 'require-corp';
    }
    try {
      const [dir, path] = locate(root, decodeURIComponent(new URL(req.url, 'http://localhost').pathname));
      let file = normalize(join(dir, path));
      if (file !== dir && !file.startsWith(dir + sep)) throw Object.assign(new Error(), { code: 'ENOENT' });
      if ((await stat(file)).isDirectory()) file = join(file, 'index.html');
      const body = await readFile(file);
      headers['Content-Type'] = types[extname(file)] ?? 'application/octet-stream';
      res.writeHead(200, headers).end(req.method === 'HEAD' ? undefined : body);
    } catch (e) {
      const missing = e.code === 'ENOENT' || e.code === 'EISDIR' || e.code === 'ENOTDIR';
      res
        .writeHead(missing ? 404 : 500, { ...headers, 'Content-Type': 'text/plain' })
        .end(missing ? 'not found' : 'server error');
    }
  });
  return new Promise((resolvePromise, reject) => {
    const tryPort = (p, triesLeft) => {
      server.once('error', (e) => {
        if (e.code === 'EADDRINUSE' && triesLeft > 0) tryPort(p + 1, triesLeft - 1);
        else reject(e);
      });
      server.listen(p, '127.0.0.1', () => {
        const url = `http://localhost:${server.address().port}/`;
        if (!quiet) {
          console.log(
            `Serving ${root} at ${url}` +
              (isolation ? ' (cross-origin isolated: threads on)' : ' (not isolated: single-thread build)'),
          );
        }
        resolvePromise({ server, url, close: () => new Promise((r) => server.close(r)) });
      });
    };
    tryPort(port, 20);
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const portArg = args.indexOf('--port');
  const port = Number(portArg >= 0 ? args[portArg + 1] : (process.env.PORT ?? 8080));
  const rootArg = args.indexOf('--root');
  startServer({
    port,
    isolation: !args.includes('--no-isolation'),
    quiet: args.includes('--quiet'),
    root: rootArg >= 0 ? args[rootArg + 1] : webRoot,
  })
    .then(({ url }) => console.log(`Open ${url} in a browser. Ctrl+C stops the server.`))
    .catch((e) => {
      console.error(`serve: ${e.message}`);
      process.exit(1);
    });
}
