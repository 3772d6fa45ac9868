// The nodenet-cni shim as one executable file: scripts/build.mjs writes dist/nodenet-cni.cjs with it, and the
// tests and benches that need their own copy build it the same way.
//
// The file is a CommonJS script that compiles the bundled shim (cni/src/main.ts, esbuild, minified) with
// vm.Script and V8's code cache for it, both embedded: the shim is one process per pod operation, and
// compiling its functions on first use cost ~4 ms of its CPU (measured here, Node 20). The cache is what
// one ADD compiled: the build runs the shim once, in-process, against a stand-in agent (node:http2 on a
// temporary unix socket, answering as the agent's gRPC server does), and asks V8 for the cache before it
// exits. A cache of every function (compiled eagerly) was tried: half again as large, and its
// deserialization ate most of the gain. The cache records V8's version and flags: it is made by the node
// that builds, in a child with NODE_OPTIONS removed, as the shebang removes it at run time. A node of
// another version or with other V8 flags rejects the cache, and the shim compiles as it would without
// one: slower, never wrong.
//
// The shebang: runtimes exec the plugin by it (env -S). NODE_EXTRA_CA_CERTS makes node parse a CA bundle at
// start (+45 ms per call measured here; the shim speaks no TLS), NODE_OPTIONS could load anything into it.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const SHIM_SHEBANG = '#!/usr/bin/env -S -u NODE_EXTRA_CA_CERTS -u NODE_OPTIONS node';

const root = new URL('..', import.meta.url).pathname;

/**
 * What the training child runs (argv: the code's file, the socket, the cache's file; the shim's CNI_*
 * environment and stdin are the child's): a stand-in agent that answers every call with an ADD result,
 * then the shim itself; its process.exit writes the cache first.
 */
const TRAIN = `
const fs = require('node:fs'), http2 = require('node:http2'), vm = require('node:vm');
const [codeFile, sock, cacheFile] = process.argv.slice(1);
const result = Buffer.from('{"cniVersion":"1.1.0","ips":[{"address":"10.244.0.2/24"}]}');
const msg = Buffer.concat([Buffer.from([0x0a, result.length]), result]); // CniResponse { result = 1 }
const framed = Buffer.concat([Buffer.from([0, 0, 0, 0, msg.length]), msg]);
const srv = http2.createServer();
srv.on('stream', (stream) => {
  stream.on('data', () => {});
  stream.on('end', () => {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0', 'grpc-message': 'OK' }));
    stream.end(framed);
  });
});
srv.listen(sock, () => {
  const script = new vm.Script(fs.readFileSync(codeFile, 'utf8'));
  const exit = process.exit;
  process.exit = (code) => {
    if (code !== 0) exit(3);
    fs.writeFileSync(cacheFile, script.createCachedData());
    exit(0);
  };
  script.runInThisContext()(exports, require, module, __filename, __dirname);
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

/** V8's code cache for `code` after one ADD, made by this node in a child without NODE_OPTIONS. */
export function codeCacheFor(code) {
  const dir = mkdtempSync(join(tmpdir(), 'nn-cni-bundle-'));
  try {
    const codeFile = join(dir, 'shim.js');
    const sock = join(dir, 'agent.sock');
    const cacheFile = join(dir, 'shim.cache');
    writeFileSync(codeFile, code);
    const env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'build0', CNI_NETNS: '/var/run/netns/build0', CNI_IFNAME: 'eth0', CNI_PATH: '/opt/cni/bin',
    };
    const config = JSON.stringify({ cniVersion: '1.1.0', name: 'nodenet', type: 'nodenet-cni', agentSocket: sock });
    // The shim's own stdout (the ADD result) is not wanted; its stderr is, should it fail.
    execFileSync(process.execPath, ['-e', TRAIN, codeFile, sock, cacheFile], { input: config, env, stdio: ['pipe', 'ignore', 'inherit'], timeout: 60_000 });
    return readFileSync(cacheFile);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
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
