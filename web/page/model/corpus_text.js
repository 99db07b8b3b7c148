// Training text for the page's live training, as the trainer reads it.
//
//   splitAddresses(text) -> [string]   the shipped excerpt (data/corpus/sotu-excerpt.txt, written by
//                                      scripts/extract_corpus_excerpt.mjs): a line "# <name>" starts
//                                      each address; text with no such line is one document
//   tokenizeDocs(texts, tokenizer) -> [Int32Array]   each document's token ids, as the trainer
//                                      and the page tokenize it (tokenize.js)
import { tokenize } from '../tokenize.js';

export function splitAddresses(text) {
  if (!/^# /m.test(text)) return [text];
  return text
    .split(/^# .*$/m)
    .map((t) => t.trim())
    .filter((t) => t !== '');
}

export function tokenizeDocs(texts, tokenizer) {
  return texts.map((t) => Int32Array.from(tokenize(t, tokenizer), (tok) => tok.id));
}
