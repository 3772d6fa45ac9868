/**
 * The rule-lookup benchmark's smoke run, as a user runs it: the real CLI
 * (`nodenet bench lookup`) at 10 and 100 Services in every mode this
 * machine has (iptables as the system has it, iptables-legacy, nftables;
 * IPVS runs in test-vm's lookup-smoke suite), with short client loops. It
 * checks that every figure, the JSON, the SVG and the PNG are produced, not
 * how large the figures are.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../agent/src/lab/lab.js';
import type { LookupDocument } from '../bench/lookup/report.js';
import { missingFigures } from '../test-vm/suites/lookup.js';

const out = mkdtempSync('/tmp/nn-bench-lookup-test-');
t.teardown(() => rmSync(out, { recursive: true, force: true }));

t.test('bench lookup at 10 and 100 Services in iptables, iptables-legacy and nftables mode', async (t) => {
  const r = spawnSync(process.execPath, [join(REPO, 'bin/nodenet.js'), 'bench', 'lookup', '--modes', 'iptables,iptables-legacy,nftables', '--sizes', '10,100',
    '--count', '500', '--seconds', '1', '--warmup', '20', '--rtt', '50', '--changes', '1', '--out', out], { encoding: 'utf8', timeout: 280_000 });
  t.equal(r.status, 0, `exit 0: ${r.stderr.slice(-1500)}`);
  t.match(r.stdout, /\| mode \| Services \| rules \| full sync \(ms\)/, 'the table');
  t.match(r.stdout, /KEP-3866/, 'the published figures beside it');
  const files = readdirSync(out);
  const json = files.find((f) => /^lookup-.*\.json$/.test(f));
  t.ok(json, `the JSON: ${files}`);
  const doc = JSON.parse(readFileSync(join(out, json!), 'utf8')) as LookupDocument;
  t.equal(doc.schema, 'nodenet.bench.lookup/v1');
  t.equal(doc.runs.length, 1, 'this machine only');
  const m = doc.runs[0]!.machine;
  t.ok(m.kernel && m.cpus > 0 && m.versions['nft'], 'the machine: kernel, cores, versions');
  const results = doc.runs[0]!.results;
  t.same(results.map((x) => `${x.mode}:${x.services}`), ['iptables:10', 'iptables:100', 'iptables-legacy:10', 'iptables-legacy:100', 'nftables:10', 'nftables:100']);
  for (const c of results) {
    t.same(missingFigures(c), [], `${c.mode} ${c.services}: every figure`);
    t.equal(c.changeSyncMs.length, 1, `${c.mode} ${c.services}: one one-endpoint change`);
    for (const x of c.targets) t.ok(x.run.connect.p50 > 0 && x.run.connect.p99 >= x.run.connect.p50 && x.run.connectsPerSecond > 0, `${c.mode} ${c.services} ${x.position}: latencies and rate`);
  }
  const ipt = results.find((x) => x.mode === 'iptables-legacy' && x.services === 100)!;
  t.match(ipt.order, /KUBE-SERVICES rule order \(100 jumps\)/, 'iptables: first and last from the kernel\'s rule order');
  t.equal(ipt.targets.find((x) => x.position === 'last')?.rank, 100);
  const base = json!.replace(/\.json$/, '');
  t.match(readFileSync(join(out, `${base}.svg`), 'utf8'), /^<svg[^>]*>[\s\S]*iptables \(legacy\)[\s\S]*<\/svg>$/, 'the SVG chart, with the modes in its legend');
  t.same([...readFileSync(join(out, `${base}.png`)).subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'the PNG chart');
});
