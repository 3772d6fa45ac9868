// Builds what runs outside the test loader:
//   dist/nodenet.js        the agent and CLI (ESM, npm packages left external), with dist/chunks/ it loads on demand
//   dist/nodenet-cni       the CNI shim, a native executable (C, cni/*.c: scripts/cni-build.mjs)
//   dist/nodenet-pause     the pause holder (C, ~60 lines), PID 1 of every pod sandbox
//   dist/nodenet-bench-tcp the lookup benchmark's native TCP client and server (C)
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, statSync, rmSync } from 'node:fs';
import { buildShim, shimStale } from './cni-build.mjs';
import { NATIVE_EXTERNAL, REQUIRE_BANNER } from './esm-bundle.mjs';

const root = new URL('..', import.meta.url).pathname;
mkdirSync(`${root}dist`, { recursive: true });

const jobs = [];
if (existsSync(`${root}agent/src/main.ts`)) {
  // Split: what only some commands need (the API watch and client-node, whose import alone takes about
  // 1.2 s here; the control plane and SQLite) is a chunk loaded by a dynamic import when it is used, so an
  // agent without an API server, and every other command, starts without it.
  // client-node (with its own dependencies) is bundled into its chunk, not left external: node resolves and
  // loads its ~840 files (760 of client-node) one by one otherwise, most of its import time (and minutes under qemu TCG, where the
  // agent waited for it); the other packages stay external (native addons, few files).
  // Every pure-JavaScript package is bundled too (execa, grpc-js, yaml, prom-client, pino: ~1,500 more files
  // resolved at start otherwise); only the native addons stay external, loaded from node_modules.
  // Built aside, then moved in: a process started from dist/ while another builds (tests on a shared checkout, a
  // lab running) finds either the old files or the new ones, never a half-written entry or a missing chunk. The
  // chunks' names carry their hash, so the new ones go in beside the old; the entry is renamed over last. Chunks no
  // build has written for a day go (a long-running agent may still load one of the previous build's on demand).
  const next = `${root}dist/.next-${process.pid}`;
  rmSync(next, { recursive: true, force: true });
  jobs.push(build({
    entryPoints: { nodenet: `${root}agent/src/main.ts` },
    outdir: next, splitting: true, chunkNames: 'chunks/[name]-[hash]',
    bundle: true, platform: 'node', target: 'node20', format: 'esm',
    external: NATIVE_EXTERNAL, sourcemap: 'linked', logLevel: 'warning',
    banner: { js: REQUIRE_BANNER },
  }).then(() => {
    mkdirSync(`${root}dist/chunks`, { recursive: true });
    const fresh = new Set(readdirSync(`${next}/chunks`));
    for (const f of fresh) renameSync(`${next}/chunks/${f}`, `${root}dist/chunks/${f}`);
    for (const f of readdirSync(next)) if (f !== 'chunks') renameSync(`${next}/${f}`, `${root}dist/${f}`);
    rmSync(next, { recursive: true, force: true });
    const dayAgo = Date.now() - 24 * 3600 * 1000;
    for (const f of readdirSync(`${root}dist/chunks`)) {
      if (!fresh.has(f) && statSync(`${root}dist/chunks/${f}`).mtimeMs < dayAgo) rmSync(`${root}dist/chunks/${f}`, { force: true });
    }
  }, (e) => {
    rmSync(next, { recursive: true, force: true });
    throw e;
  }));
}
await Promise.all(jobs);

// dist/nodenet-cni: the CNI shim, C with no library but libc, so a runtime's call costs an exec, not a Node start.
const shimBin = `${root}dist/nodenet-cni`;
if (existsSync(`${root}cni/nodenet-cni.c`) && shimStale(shimBin)) {
  const warnings = buildShim(shimBin);
  if (warnings) process.stderr.write(warnings);
}
// The TypeScript shim's bundle, from before the shim was C: nothing runs it any more.
rmSync(`${root}dist/nodenet-cni.cjs`, { force: true });

const pauseSrc = `${root}agent/src/netns/pause.c`;
const pauseBin = `${root}dist/nodenet-pause`;
if (existsSync(pauseSrc) && (!existsSync(pauseBin) || statSync(pauseBin).mtimeMs < statSync(pauseSrc).mtimeMs)) {
  execFileSync('cc', ['-O2', '-Wall', '-o', pauseBin, pauseSrc], { stdio: 'inherit' });
}

// dist/nodenet-bench-tcp: the rule-lookup benchmark's native client and server (bench/lookup/tcp.c).
const benchSrc = `${root}bench/lookup/tcp.c`;
const benchBin = `${root}dist/nodenet-bench-tcp`;
if (existsSync(benchSrc) && (!existsSync(benchBin) || statSync(benchBin).mtimeMs < statSync(benchSrc).mtimeMs)) {
  execFileSync('cc', ['-O2', '-Wall', '-o', benchBin, benchSrc], { stdio: 'inherit' });
}
