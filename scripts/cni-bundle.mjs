// The nodenet-cni shim as one executable file: scripts/build.mjs writes dist/nodenet-cni.cjs with it, and the
// tests and benches that need their own copy build it the same way.
//
// The file is a CommonJS script that compiles the bundled shim (cni/src/main.ts, esbuild, minified) with
// vm.Script and V8's code cache for it, both embedded: the shim is one process per pod operation, and
// compiling its functions on first use cost ~3 ms of its CPU (measured here, Node 20). The cache holds
// every function, compiled eagerly at build time (--no-lazy around the compile, then V8's flags as they
// were, which is what the cache's flag hash records). It is made by the node that builds, in a child with
// NODE_OPTIONS removed, as the shebang removes it at run time. A node of another version or with other V8
// flags rejects the cache, and the shim compiles as it would without one: slower, never wrong.
//
// The shebang: runtimes exec the plugin by it (env -S). NODE_EXTRA_CA_CERTS makes node parse a CA bundle at
// start (+45 ms per call measured here; the shim speaks no TLS), NODE_OPTIONS could load anything into it.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';

export const SHIM_SHEBANG = '#!/usr/bin/env -S -u NODE_EXTRA_CA_CERTS -u NODE_OPTIONS node';

const root = new URL('..', import.meta.url).pathname;

/** What the child runs: the code on stdin, compiled with every function eager, its cache on stdout. */
const MAKE_CACHE = `
const v8 = require('node:v8'), vm = require('node:vm');
const chunks = [];
process.stdin.on('data', (c) => chunks.push(c)).on('end', () => {
  v8.setFlagsFromString('--no-lazy');
  const script = new vm.Script(Buffer.concat(chunks).toString('utf8'));
  v8.setFlagsFromString('--lazy');
  process.stdout.write(script.createCachedData());
});`;

/** The bundled shim, as the function CommonJS would wrap it in. */
export async function shimCode() {
  const r = await build({
    entryPoints: [`${root}cni/src/main.ts`],
    bundle: true, platform: 'node', target: 'node20', format: 'cjs', minify: true,
    write: false, logLevel: 'warning', legalComments: 'none',
  });
  const code = r.outputFiles[0].text;
  // vm.Script has no loader for import(): esbuild must have turned every dynamic import into a lazy init.
  if (/\bimport\(/.test(code)) throw new Error('the shim bundle has a dynamic import(), which vm.Script cannot run');
  return `(function (exports, require, module, __filename, __dirname) {${code}\n})`;
}

/** V8's code cache for `code`, made by this node in a child without NODE_OPTIONS. */
export function codeCacheFor(code) {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  return execFileSync(process.execPath, ['-e', MAKE_CACHE], { input: code, env, maxBuffer: 64 * 1024 * 1024 });
}

/** The executable's text: shebang, then a loader that runs `code` with `cache` (none: compiled as usual). */
export function shimFile(code, cache, shebang = SHIM_SHEBANG) {
  const cached = cache ? `Buffer.from(${JSON.stringify(Buffer.from(cache).toString('base64'))}, 'base64')` : 'undefined';
  return `${shebang}
// nodenet-cni, built by scripts/cni-bundle.mjs: the bundled shim and V8's code cache for it.
'use strict';
const code = ${JSON.stringify(code)};
const cachedData = ${cached};
new (require('node:vm').Script)(code, { filename: __filename, cachedData }).runInThisContext()(exports, require, module, __filename, __dirname);
`;
}

/** Builds the shim into `outfile` (mode 0755). `codeCache: false` leaves the cache out. */
export async function buildShim(outfile, { shebang = SHIM_SHEBANG, codeCache = true } = {}) {
  const code = await shimCode();
  writeFileSync(outfile, shimFile(code, codeCache ? codeCacheFor(code) : null, shebang));
  chmodSync(outfile, 0o755);
}
