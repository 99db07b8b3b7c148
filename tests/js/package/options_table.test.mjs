// web/docs/api.md's options tables against the types: each table, marked
// <!-- options: TypeName --> above it, names exactly the properties of that type in
// web/lib/index.d.ts (every member of a union or intersection: a layer's forward with and
// without a cache, its config with seed or weights), and where a property's doc comment
// states a default ("(default X)", "default X", "'X' (default)"), the table's default
// column starts with it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import ts from 'typescript';

const repo = fileURLToPath(new URL('../../..', import.meta.url));
const API = join(repo, 'web/docs/api.md');
const TYPES = join(repo, 'web/lib/index.d.ts');

// api.md -> [{ type, line, rows: [{ name, type, default }] }]
function tables() {
  const lines = readFileSync(API, 'utf8').split('\n');
  const found = [];
  lines.forEach((line, i) => {
    const marker = /^<!-- options: (\w+) -->$/.exec(line);
    if (!marker) return;
    let j = i + 1;
    while (!lines[j].startsWith('|')) ++j;
    const header = cells(lines[j]);
    assert.deepEqual(header, ['option', 'type', 'default', '2-D / heads', 'in depth'], `api.md:${j + 1}`);
    const rows = [];
    for (j += 2; lines[j]?.startsWith('|'); ++j) {
      const [name, type, byDefault] = cells(lines[j]);
      rows.push({ name: name.replace(/`/g, ''), type, default: byDefault });
    }
    found.push({ type: marker[1], line: i + 1, rows });
  });
  return found;
}

// a table row -> its cells ('\|' is a | inside one)
const cells = (row) =>
  row
    .slice(1, -1)
    .split(/(?<!\\)\|/)
    .map((c) => c.trim());

// index.d.ts's type `name` -> Map(property -> its doc comment), over every member of a union
const program = ts.createProgram([TYPES], { strict: true, target: ts.ScriptTarget.ES2022, noEmit: true });
const checker = program.getTypeChecker();
const source = program.getSourceFile(TYPES);
function properties(name) {
  const decl = source.statements.find(
    (s) => (ts.isInterfaceDeclaration(s) || ts.isTypeAliasDeclaration(s)) && s.name.text === name,
  );
  assert.ok(decl, `index.d.ts declares ${name}`);
  const type = checker.getTypeAtLocation(decl.name);
  const members = type.isUnion() ? type.types : [type];
  const props = new Map();
  for (const member of members) {
    for (const symbol of checker.getPropertiesOfType(member)) {
      const doc = ts.displayPartsToString(symbol.getDocumentationComment(checker));
      if (!props.has(symbol.name) || (!props.get(symbol.name) && doc)) props.set(symbol.name, doc);
    }
  }
  return props;
}

// A doc comment -> the default it states, or null.
function statedDefault(doc) {
  const m =
    /\(default:?\s+([^()]*(?:\([^()]*\)[^()]*)?)\)/.exec(doc) ??
    /'([\w-]+)'\s+\(default\)/.exec(doc) ??
    /\bdefault:?\s+([^;,.]+)/i.exec(doc);
  return m ? m[1] : null;
}

// a default as written -> its first word, without quotes or backticks ('0: none' -> '0')
const firstWord = (text) =>
  text
    .replace(/[`'"]/g, '')
    .trim()
    .split(/[\s:,]/)[0];

const TABLES = tables();

test('api.md has one options table per entry point', () => {
  assert.deepEqual(
    TABLES.map((t) => t.type),
    [
      'CreateAttentionOptions',
      'AttentionOptions',
      'AttentionBackwardOptions',
      'MatmulOptions',
      'KvCacheConfig',
      'MultiHeadConfig',
      'ForwardOptions',
      'RotaryOptions',
      'TensorOptions',
    ],
  );
});

for (const table of TABLES) {
  test(`api.md:${table.line}: the table of ${table.type} names its options and their defaults as index.d.ts does`, () => {
    const props = properties(table.type);
    const named = table.rows.map((r) => r.name);
    assert.deepEqual([...named].sort(), [...props.keys()].sort(), 'the options in the table and in the types');
    assert.equal(new Set(named).size, named.length, 'each option once');
    for (const row of table.rows) {
      assert.ok(row.type && row.default, `${table.type}.${row.name}: a type and a default`);
      const stated = statedDefault(props.get(row.name));
      if (stated === null) continue;
      assert.equal(
        firstWord(row.default),
        firstWord(stated),
        `${table.type}.${row.name}: the table says ${row.default}, the types (default ${stated})`,
      );
    }
  });
}

// What the comparison above reads from the types: the defaults in each form they are written
// in, none where an option is required, and every member of a union.
test('the defaults the types state are read in each form they are written', () => {
  const props = properties('KvCacheConfig');
  assert.equal(firstWord(statedDefault(props.get('dtype'))), 'float32');
  assert.equal(firstWord(statedDefault(properties('CreateAttentionOptions').get('threads'))), 'auto');
  assert.equal(firstWord(statedDefault(properties('AttentionOptions').get('scale'))), '1/√dK');
  assert.equal(firstWord(statedDefault(properties('AttentionOptions').get('causal'))), 'false');
  assert.equal(statedDefault(properties('KvCacheConfig').get('batch')), null);
  assert.ok(properties('MultiHeadConfig').has('seed') && properties('MultiHeadConfig').has('weights'));
  assert.ok(properties('ForwardOptions').has('cache') && properties('ForwardOptions').has('context'));
});
