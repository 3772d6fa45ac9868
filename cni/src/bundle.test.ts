/**
 * scripts/cni-bundle.mjs: the shim executable is the bundle plus V8's code
 * cache for it, and this node accepts that cache; a cache it rejects (another
 * node, other flags, damage) costs time, never behaviour.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { buildShim, codeCacheFor, SHIM_SHEBANG, shimCode, shimFile } from '../../scripts/cni-bundle.mjs';

const work = mkdtempSync(join(tmpdir(), 'nn-cni-bundle-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));
const PATH = `${dirname(process.execPath)}:/usr/bin:/bin`;
const version = (file: string) => spawnSync(file, [], { env: { PATH, CNI_COMMAND: 'VERSION' }, encoding: 'utf8' });
const VERSION_OUT = { cniVersion: '1.1.0', supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] };

t.test('the executable: the shebang that drops NODE_OPTIONS and NODE_EXTRA_CA_CERTS, the code, its cache', async (t) => {
  const file = join(work, 'nodenet-cni');
  await buildShim(file);
  const text = readFileSync(file, 'utf8');
  t.equal(text.split('\n')[0], '#!/usr/bin/env -S -u NODE_EXTRA_CA_CERTS -u NODE_OPTIONS node');
  t.equal(text.split('\n')[0], SHIM_SHEBANG);
  const code = await shimCode();
  t.ok(text.includes(JSON.stringify(code)), 'the bundled shim, as a string');
  t.match(text, /const cachedData = Buffer\.from\("[A-Za-z0-9+/=]{1000,}", 'base64'\);/, 'the code cache');
  const r = version(file);
  t.equal(r.status, 0, r.stderr);
  t.same(JSON.parse(r.stdout), VERSION_OUT);
  // Options a runtime may pass on change nothing: the shebang drops them.
  const withOpts = spawnSync(file, [], { env: { PATH, CNI_COMMAND: 'VERSION', NODE_OPTIONS: '--require /nonexistent.js' }, encoding: 'utf8' });
  t.equal(withOpts.status, 0, withOpts.stderr);
});

t.test('this node accepts the cache it made by running an ADD (in a child without NODE_OPTIONS, as the shebang runs it)', async (t) => {
  const code = await shimCode();
  const cache = codeCacheFor(code);
  const topLevel = spawnSync(process.execPath, ['-e', `process.stdout.write(String(new (require('node:vm').Script)(require('node:fs').readFileSync(0, 'utf8')).createCachedData().length))`], { input: code, env: { PATH }, encoding: 'utf8' });
  t.ok(cache.length > 2 * Number(topLevel.stdout), `the functions an ADD ran are in it, not just the top level (${cache.length} against ${topLevel.stdout} bytes)`);
  const check = spawnSync(process.execPath, ['-e', `
    const vm = require('node:vm'), fs = require('node:fs');
    const s = new vm.Script(fs.readFileSync(0, 'utf8'), { cachedData: fs.readFileSync(process.argv[1]) });
    process.stdout.write(String(s.cachedDataRejected));`, join(work, 'cache.bin')], {
    input: (writeFileSync(join(work, 'cache.bin'), cache), code), env: { PATH }, encoding: 'utf8',
  });
  t.equal(check.stdout, 'false', check.stderr);
});

t.test('a cache node rejects, or none, leaves the shim working', async (t) => {
  const code = await shimCode();
  for (const [name, cache] of [['damaged', Buffer.alloc(4096, 7)], ['none', null]] as const) {
    const file = join(work, `shim-${name}`);
    writeFileSync(file, shimFile(code, cache));
    chmodSync(file, 0o755);
    const r = version(file);
    t.equal(r.status, 0, `${name}: ${r.stderr}`);
    t.same(JSON.parse(r.stdout), VERSION_OUT, name);
  }
});
