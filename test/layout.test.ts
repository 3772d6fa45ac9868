/**
 * The layout ARCHITECTURE.md describes, enforced on the imports (no root).
 *
 * Three packages and the wire:
 *   lib/           the ground: reconcile/, errors/, log/, json/, state/, net/, lifecycle/, pki/ (and
 *                  testing/ helpers for tests). It imports nothing of ours but itself and proto/.
 *   controlplane/  the API server, its storage and the controllers: imports lib/ and itself, nothing
 *                  of the agent's.
 *   agent/src/     the node agent, the CLI and the lab, in floors. A module may import its own floor
 *                  (but proxy/ and overlay/ never each other) and the floors below, never one above:
 *                    1  cli/, main.ts
 *                    2  node/ (the agent and the composition root)
 *                    3  cniserver/, watch/, pods/, lab/, config/ (and the controlplane/ package)
 *                    4  sandbox/, proxy/, overlay/, trace/, cnitypes/, dns/
 *                    5  ipam/, netlink/, netns/, netfilter/
 *                    6  exec/
 *   proto/         the shim<->agent contract, importable from every floor; it imports nothing of ours.
 *
 * Also: product code never imports testing/ or a test file; nothing in agent/ (tests included) imports
 * the shim (cni/), which is C built on libc alone (its sources include only each other and C library
 * headers) and shares nothing with the agent but the wire (proto/cni/v1); the pure modules import no
 * fs, child_process, execa or netlink. Each bench under bench/ imports only itself and bench/lib (what the
 * benches share: the percentile definition, argument parsing, report formats), never another bench.
 */
import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(new URL('..', import.meta.url).pathname);
const FLOORS: Readonly<Record<string, number>> = {
  cli: 1, 'main.ts': 1,
  node: 2,
  cniserver: 3, watch: 3, controlplane: 3, pods: 3, lab: 3, config: 3,
  sandbox: 4, proxy: 4, overlay: 4, trace: 4, cnitypes: 4, dns: 4,
  ipam: 5, netlink: 5, netns: 5, netfilter: 5,
  exec: 6,
};
const GROUND = new Set(['reconcile', 'errors', 'log', 'json', 'state', 'net', 'lifecycle', 'pki']);
const PURE = [
  /\/render\.ts$/, /\/plan\.ts$/, /ipam\/allocator\.ts$/, /ipam\/config\.ts$/, /ipam\/range(-set)?\.ts$/, /ipam\/resolv-conf\.ts$/,
  /reconcile\/change-tracker\.ts$/, /reconcile\/deep-equal\.ts$/, /-parse\.ts$/, /nft-listing\.ts$/, /nft-script\.ts$/,
  /json\/read\.ts$/, /proto\/cni\/v1\/contract\.ts$/, /cnitypes\/.*\.ts$/, /proxy\/model\/.*\.ts$/, /proxy\/categorize\.ts$/,
  /controlplane\/api\/protobuf(-schema)?\.ts$/, /trace\/path\.ts$/, /dns\/records\.ts$/, /controlplane\/addons\/coredns\.ts$/,
];
const IMPURE_IMPORTS = /^(node:)?(fs|fs\/promises|child_process)$|^execa$|^netlink$/;

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? walk(p) : p.endsWith('.ts') ? [p] : [];
  });
}
/** Tests and what only tests use: helpers, fixtures and test data (`*testdata*.ts`, which product code must not import). */
const isTest = (f: string) => /\.test\.ts$/.test(f) || f.includes('/testing/') || /\/test-(fixtures|helpers)\.ts$/.test(f) || /testdata[^/]*\.ts$/.test(f) ||
  /\.(contract|crash|child)\.ts$/.test(f);
const PACKAGES = ['agent/src', 'controlplane', 'lib'] as const;
const all = [...PACKAGES.flatMap((p) => walk(join(ROOT, p))), ...walk(join(ROOT, 'proto'))];
const sources = all.filter((f) => !isTest(f));

function imports(file: string): { spec: string; target: string | null }[] {
  const text = readFileSync(file, 'utf8');
  const out: { spec: string; target: string | null }[] = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)) {
    const spec = m[1] ?? m[2]!;
    out.push({ spec, target: spec.startsWith('.') ? resolve(dirname(file), spec).replace(/\.js$/, '.ts') : null });
  }
  return out;
}

/** agent/src/<module>/... → module ('main.ts' for the entry); lib/<module>/... → module (a ground one); controlplane/... → 'controlplane'. */
function moduleOf(file: string): string | null {
  const rel = relative(ROOT, file);
  if (rel.startsWith('controlplane/')) return 'controlplane';
  for (const p of ['agent/src/', 'lib/']) if (rel.startsWith(p)) return rel.slice(p.length).split('/')[0] ?? null;
  return null;
}
const packageOf = (file: string) => PACKAGES.find((p) => relative(ROOT, file).startsWith(`${p}/`)) ?? null;

t.test('every agent module is on a floor, every lib/ module is ground, and neither package holds the other\'s', async (t) => {
  const bad: string[] = [];
  for (const f of sources) {
    const pkg = packageOf(f);
    const m = moduleOf(f);
    if (pkg === 'agent/src' && !(m! in FLOORS && m !== 'controlplane')) bad.push(`${relative(ROOT, f)}: agent/src/${m} has no floor (ground modules live in lib/, the control plane in controlplane/)`);
    if (pkg === 'lib' && !GROUND.has(m!)) bad.push(`${relative(ROOT, f)}: lib/${m} is not a ground module`);
  }
  t.ok(sources.length > 200, `${sources.length} product files`);
  t.same(bad, [], bad.join('\n'));
});

t.test('imports go down the floors (or to the ground), never up; proxy/ and overlay/ never meet', async (t) => {
  const bad: string[] = [];
  for (const f of sources) {
    const from = moduleOf(f);
    if (from === null) continue;
    for (const { spec, target } of imports(f)) {
      if (!target) continue;
      const rel = relative(ROOT, target);
      if (rel.startsWith('proto/')) continue;
      if (rel.startsWith('cni/')) { bad.push(`${relative(ROOT, f)} imports the shim (${spec})`); continue; }
      const to = moduleOf(target);
      if (to === null || to === from || GROUND.has(to)) continue;
      if (GROUND.has(from)) { bad.push(`${relative(ROOT, f)} (ground) imports ${to}/ (${spec})`); continue; }
      if ((from === 'proxy' && to === 'overlay') || (from === 'overlay' && to === 'proxy')) bad.push(`${relative(ROOT, f)}: proxy/ and overlay/ must not import each other (${spec})`);
      const ff = FLOORS[from]!;
      const tf = FLOORS[to];
      if (tf === undefined) bad.push(`${relative(ROOT, f)} imports ${to}/, which has no floor (${spec})`);
      else if (tf < ff) bad.push(`${relative(ROOT, f)} (floor ${ff}, ${from}/) imports ${to}/ on floor ${tf}: upward (${spec})`);
    }
  }
  t.same(bad, [], bad.join('\n'));
});

t.test('the ground (lib/) imports nothing of ours but itself and proto/', async (t) => {
  const bad: string[] = [];
  for (const f of all.filter((x) => packageOf(x) === 'lib')) {
    for (const { spec, target } of imports(f)) {
      if (!target) continue;
      const rel = relative(ROOT, target);
      if (!rel.startsWith('lib/') && !rel.startsWith('proto/')) bad.push(`${relative(ROOT, f)} imports ${rel} (${spec})`);
    }
  }
  t.same(bad, [], bad.join('\n'));
});

t.test('the control plane imports nothing of the agent, tests included: lib/ and itself', async (t) => {
  const bad: string[] = [];
  for (const f of all.filter((x) => packageOf(x) === 'controlplane')) {
    for (const { spec, target } of imports(f)) {
      if (!target) continue;
      const rel = relative(ROOT, target);
      if (!rel.startsWith('controlplane/') && !rel.startsWith('lib/') && !rel.startsWith('proto/')) bad.push(`${relative(ROOT, f)} imports ${rel} (${spec})`);
    }
  }
  t.same(bad, [], bad.join('\n'));
});

t.test('test data is data: every *testdata*.ts is imported by tests only', async (t) => {
  const data = all.filter((f) => /testdata[^/]*\.ts$/.test(f));
  t.ok(data.length >= 4, `${data.length} test data files`);
  const bad = sources.flatMap((f) => imports(f).filter((i) => i.target && /testdata[^/]*\.ts$/.test(i.target)).map((i) => `${relative(ROOT, f)} imports ${i.spec}`));
  t.same(bad, [], bad.join('\n'));
});

t.test('product code never imports test helpers or tests', async (t) => {
  const bad = sources.flatMap((f) => imports(f).filter((i) => i.target && isTest(i.target)).map((i) => `${relative(ROOT, f)} imports ${i.spec}`));
  t.same(bad, []);
});

t.test('nothing in agent/ imports the shim, tests included; proto/ imports nothing of ours', async (t) => {
  const bad: string[] = [];
  for (const f of all) {
    for (const { spec, target } of imports(f)) if (target && relative(ROOT, target).startsWith('cni/')) bad.push(`${relative(ROOT, f)} imports ${spec}`);
  }
  for (const f of sources.filter((x) => relative(ROOT, x).startsWith('proto/'))) {
    for (const { spec, target } of imports(f)) if (target && !relative(ROOT, target).startsWith('proto/')) bad.push(`${relative(ROOT, f)} imports ${spec}`);
  }
  t.same(bad, [], bad.join('\n'));
});

/** The C library headers the shim may include: it links nothing but libc. */
const LIBC_HEADERS = new Set([
  'errno.h', 'fcntl.h', 'math.h', 'poll.h', 'signal.h', 'stdarg.h', 'stdbool.h', 'stddef.h', 'stdint.h', 'stdio.h', 'stdlib.h', 'string.h',
  'sys/socket.h', 'sys/stat.h', 'sys/types.h', 'sys/un.h', 'time.h', 'unistd.h',
]);

t.test('the shim is C on libc alone: its files include each other and C library headers, and it has no TypeScript but its tests', async (t) => {
  const files = readdirSync(join(ROOT, 'cni'));
  const c = files.filter((f) => /\.[ch]$/.test(f));
  t.ok(c.includes('nodenet-cni.c'), 'cni/nodenet-cni.c is the entry');
  const bad: string[] = [];
  for (const f of c) {
    for (const m of readFileSync(join(ROOT, 'cni', f), 'utf8').matchAll(/^\s*#\s*include\s*([<"])([^>"]+)[>"]/gm)) {
      const [, kind, name] = m;
      if (kind === '"' ? !c.includes(name!) : !LIBC_HEADERS.has(name!)) bad.push(`cni/${f} includes ${kind}${name}`);
    }
  }
  for (const f of files.filter((x) => x.endsWith('.ts'))) if (!isTest(f) && f !== 'shim-harness.ts') bad.push(`cni/${f}: TypeScript that is not a test`);
  t.same(bad, [], bad.join('\n'));
});

t.test('the CNI ADD/DEL path spawns nothing: no module it reaches imports child_process, execa or exec/', async (t) => {
  // What the agent runs per CNI call: the server, the handler, the sandbox and what it is given (netlink,
  // nfnetlink set elements, /proc/sys, IPAM on disk, the records). Type-only imports carry no code.
  const entries = [
    'cniserver/server.ts', 'cniserver/sandbox-handler.ts', 'cniserver/replay-deletions.ts',
    'sandbox/sandbox.ts', 'sandbox/ipam-adapter.ts', 'sandbox/record-store.ts', 'sandbox/masquerade.ts',
    'netlink/netlink.ts', 'netlink/link-deleter.ts', 'netfilter/nft/nft-sets.ts', 'netns/sysctl.ts', 'ipam/ipam.ts', 'ipam/disk-store.ts',
  ].map((f) => join(ROOT, 'agent/src', f));
  const seen = new Set<string>();
  const queue = [...entries];
  const bad: string[] = [];
  while (queue.length) {
    const f = queue.pop()!;
    if (seen.has(f)) continue;
    seen.add(f);
    const text = readFileSync(f, 'utf8');
    for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s(?!type\s)[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)) {
      const spec = m[1] ?? m[2]!;
      const target = spec.startsWith('.') ? resolve(dirname(f), spec).replace(/\.js$/, '.ts') : null;
      if (/^(node:)?child_process$|^execa$/.test(spec) || target?.includes('/agent/src/exec/')) bad.push(`${relative(ROOT, f)} imports ${spec}`);
      if (target) queue.push(target);
    }
  }
  t.ok(seen.size > 30, `${seen.size} modules on the path`);
  t.same(bad, [], bad.join('\n'));
});

t.test('pure modules import no fs, child_process, execa or netlink', async (t) => {
  const pure = sources.filter((f) => PURE.some((re) => re.test(f)));
  t.ok(pure.length > 20, `${pure.length} pure modules checked`);
  const bad = pure.flatMap((f) => imports(f).filter((i) => IMPURE_IMPORTS.test(i.spec)).map((i) => `${relative(ROOT, f)} imports ${i.spec}`));
  t.same(bad, [], bad.join('\n'));
});

t.test('no bench imports another bench: what they share is in bench/lib (which imports no bench)', async (t) => {
  const files = walk(join(ROOT, 'bench'));
  const folderOf = (f: string) => {
    const parts = relative(join(ROOT, 'bench'), f).split('/');
    return parts.length > 1 ? parts[0]! : null;
  };
  const bad: string[] = [];
  for (const f of files) {
    const from = folderOf(f);
    if (from === null) bad.push(`${relative(ROOT, f)}: a file at bench/'s top, outside any bench (shared code lives in bench/lib)`);
    for (const { spec, target } of imports(f)) {
      if (!target || !relative(ROOT, target).startsWith('bench/')) continue;
      const to = folderOf(target);
      if (to !== from && to !== 'lib') bad.push(`${relative(ROOT, f)} imports ${relative(ROOT, target)} (${spec})`);
    }
  }
  t.ok(files.length > 50, `${files.length} bench files`);
  t.ok(files.some((f) => folderOf(f) === 'lib'), 'bench/lib exists');
  t.same(bad, [], bad.join('\n'));
});
