// Writes docs/asyncapi.json and docs/schemas/*.json from the zod schemas, and the contract's rules into the README's
// "Kafka contract" section (between its `contract rules` markers), so the README and the AsyncAPI document say the
// same. `--check` fails when any of them is stale.
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { asyncApiDocument, jsonSchemas } from '../src/contract/asyncapi.ts';
import { contractRulesMarkdown } from '../src/contract/contract-rules.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const files: Record<string, string> = {
  'docs/asyncapi.json': JSON.stringify(asyncApiDocument(), null, 2) + '\n',
};
for (const [type, schema] of Object.entries(jsonSchemas()))
  files[`docs/schemas/${type}.json`] = JSON.stringify(schema, null, 2) + '\n';

const readmePath = join(root, 'README.md');
const begin =
  '<!-- contract rules: begin (generated from src/contract/contract-rules.ts by npm run docs:contract) -->';
const end = '<!-- contract rules: end -->';
const readme = readFileSync(readmePath, 'utf8');
const from = readme.indexOf(begin);
const to = readme.indexOf(end);
if (from < 0 || to < from) throw new Error(`README.md has no "${begin}" ... "${end}" block`);
const spliced = `${readme.slice(0, from)}${begin}\n${contractRulesMarkdown()}\n${end}${readme.slice(to + end.length)}`;
files['README.md'] = await format(spliced, {
  ...(await resolveConfig(readmePath)),
  filepath: readmePath,
});

const check = process.argv.includes('--check');
const stale: string[] = [];
for (const [path, text] of Object.entries(files)) {
  const full = join(root, path);
  if (check) {
    if (!existsSync(full) || readFileSync(full, 'utf8') !== text) stale.push(path);
  } else {
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, text);
  }
}
if (check && stale.length) {
  console.error(`contract docs are stale (run npm run docs:contract): ${stale.join(', ')}`);
  process.exitCode = 1;
} else {
  console.log(check ? 'contract docs up to date' : `wrote ${Object.keys(files).length} files`);
}
