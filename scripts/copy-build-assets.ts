// `npm run build` compiles TypeScript only; the Redis Lua scripts are read at run time from beside their module, so
// they are copied next to the compiled files (dist/src/redis/*.lua).
import { cpSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
let copied = 0;
for (const entry of readdirSync(join(root, 'src'), { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.lua')) continue;
  const from = join(entry.parentPath, entry.name);
  cpSync(from, join(root, 'dist', from.slice(root.length + 1)));
  copied++;
}
console.log(`copied ${copied} Lua scripts into dist/`);
