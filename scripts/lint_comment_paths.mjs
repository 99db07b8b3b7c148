// Fails when a comment names a repository file that does not exist: every path in a comment of
// a tracked source file (// and /* */ in JS, TS and C++; # in shell, CMake and Python; <!-- -->
// in HTML) that starts at the repository's root (cpp/, web/, scripts/, tests/) or at an include
// folder (wa/ is cpp/include/wa/; gemm/, kv/, attention/, runtime/ are cpp/src/'s, where the
// path names a file) must name a file or folder in the tree, or one that git ignores (a build
// output: web/lib/wasm/, web/lib/index.cjs). Patterns (*, <name>, {a,b}, …) are not paths.
// Run by scripts/lint.sh.
//   node scripts/lint_comment_paths.mjs   -> prints FILE:LINE: PATH for each, exits 1 if any
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const SELF = 'scripts/lint_comment_paths.mjs';

// a file's comment syntax, by its name
const SLASHES = /\.(m?js|cjs|m?ts|cpp|h|def)$/;
const HASHES = /(\.(sh|py|txt)|CMakeLists\.txt|^\.ci\/run)$/;
const HTML = /\.html$/;

// comment text of source, each piece with the line it starts on -> [{ line, text }]
function comments(file, source) {
  const out = [];
  const lines = source.split('\n');
  if (HASHES.test(file)) {
    lines.forEach((l, i) => {
      const at = l.search(/(^|\s)#/);
      if (at >= 0) out.push({ line: i + 1, text: l.slice(at) });
    });
    return out;
  }
  const block = HTML.test(file) ? /<!--([\s\S]*?)-->/g : /\/\*([\s\S]*?)\*\//g;
  for (const m of source.matchAll(block)) out.push({ line: source.slice(0, m.index).split('\n').length, text: m[1] });
  if (SLASHES.test(file) || HTML.test(file))
    lines.forEach((l, i) => {
      // a // after the line's start or a space: not a URL's (https://) nor a regex's
      const at = l.search(/(^|\s)\/\//);
      if (at >= 0) out.push({ line: i + 1, text: l.slice(at) });
    });
  return out;
}

// path-like words: a root folder, then name characters and slashes, ending on a name or a slash
const PATH = /(?<![\w./@-])((?:cpp|web|scripts|tests|wa|gemm|kv|attention|runtime)\/[\w./-]*[\w/])/g;
const INCLUDE_ROOTS = {
  wa: 'cpp/include/',
  gemm: 'cpp/src/',
  kv: 'cpp/src/',
  attention: 'cpp/src/',
  runtime: 'cpp/src/',
};
const PATTERN = /^[*<{$…]|\.\.\./; // what follows the word, when it is a pattern rather than a path

const ignored = (path) => {
  try {
    execFileSync('git', ['check-ignore', '-q', '--no-index', path], { cwd: root });
    return true;
  } catch {
    return false;
  }
};

const files = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((f) => f && f !== SELF && (SLASHES.test(f) || HASHES.test(f) || HTML.test(f)));
const missing = [];
for (const file of files) {
  if (!existsSync(join(root, file))) continue;
  for (const { line, text } of comments(file, readFileSync(join(root, file), 'utf8')))
    for (const m of text.matchAll(PATH)) {
      const word = m[1].replace(/\.+$/, '');
      if (PATTERN.test(text.slice(m.index + m[1].length))) continue;
      const top = word.split('/')[0];
      const prefix = INCLUDE_ROOTS[top];
      // cpp/src's folders as include roots only where the word names a file (gemm/gemm_packed.h),
      // not where it is prose ("attention/softmax")
      if (prefix && top !== 'wa' && !/\.\w+$/.test(word)) continue;
      const path = (prefix ?? '') + word;
      if (!existsSync(join(root, path)) && !ignored(path)) missing.push(`${file}:${line}: ${word}`);
    }
}
if (missing.length) {
  console.error(`lint: comments name ${missing.length} file(s) that do not exist:\n${missing.join('\n')}`);
  process.exit(1);
}
