// Removes what a crashed nodenet test, demo or bench run left behind: processes
// inside nn-* namespaces, the namespaces themselves, their bind mounts, and
// state under /run/nodenet-test. Touches nothing else.
import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, rmSync, existsSync } from 'node:fs';

const PREFIX = process.env.NODENET_NS_PREFIX ?? 'nn-';
const out = (cmd, args) => spawnSync(cmd, args, { encoding: 'utf8' }).stdout ?? '';
const names = out('ip', ['netns', 'list']).split('\n').map((l) => l.split(' ')[0]).filter((n) => n && n.startsWith(PREFIX));
let n = 0;
for (const ns of names) {
  for (const pid of out('ip', ['netns', 'pids', ns]).split('\n').filter(Boolean)) {
    try { process.kill(Number(pid), 'SIGKILL'); } catch {}
  }
}
for (const ns of names) {
  spawnSync('ip', ['netns', 'del', ns]);
  n++;
}
// Bind mounts whose netns file survived (ip netns del failed, or a pod netns under our run dir).
for (const dir of ['/run/nodenet-test']) {
  if (!existsSync(dir)) continue;
  const mounts = out('findmnt', ['-rn', '-o', 'TARGET']).split('\n').filter((m) => m.startsWith(dir));
  for (const m of mounts.reverse()) spawnSync('umount', ['-l', m]);
  rmSync(dir, { recursive: true, force: true });
}
if (n) console.error(`cleanup: removed ${n} leftover namespace(s) named ${PREFIX}*`);
