// Removes what a crashed nodenet test, demo or bench run left behind, and only
// that: `nodenet lab cleanup` (agent/src/lab/leftovers.ts) removes labs whose
// owner process is gone and nn-* namespaces no live process owns. A concurrent
// run's labs, a user's `demo --keep` and a live test's namespaces are kept.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const cli = new URL('../dist/nodenet.js', import.meta.url).pathname;
if (!existsSync(cli)) {
  console.error('cleanup: dist/nodenet.js is missing; run `npm run build` first');
  process.exit(1);
}
const out = execFileSync(process.execPath, [cli, 'lab', 'cleanup'], { encoding: 'utf8' });
if (!out.startsWith('nothing')) process.stderr.write(`cleanup: ${out}`);
