// Writes docs/asyncapi.json and docs/schemas/*.json from the zod schemas. `--check` fails when they are stale.
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { asyncApiDocument, jsonSchemas } from '../src/contract/asyncapi.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const files: Record<string, string> = {
  'docs/asyncapi.json': JSON.stringify(asyncApiDocument(), null, 2) + '\n',
};
for (const [type, schema] of Object.entries(jsonSchemas()))
  files[`docs/schemas/${type}.json`] = JSON.stringify(schema, null, 2) + '\n';

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
