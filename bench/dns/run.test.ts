/**
 * bench:dns's smoke run: `run.ts --smoke` end to end (a control plane, 1,000 Services, nodenet dns from dist/
 * and dnsmasq on 127.0.0.1, dnsperf for 2 s per case, freshness), its results JSON checked for structure,
 * positive figures and answers: no timing is asserted, only that every figure exists and every query got
 * the answer it should. Skips only when dnsperf or dnsmasq is missing (the preflight installs both).
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dnsmasqVersion, dnsperfVersion } from './tools.js';
import { figures, type DnsBenchResult } from './report.js';
import { CASES } from './workload.js';

const here = dirname(fileURLToPath(import.meta.url));
const missing = [dnsperfVersion() === null ? 'dnsperf' : null, dnsmasqVersion() === null ? 'dnsmasq' : null].filter(Boolean);

t.test('bench:dns --smoke: both servers, every case, every figure positive, every answer right', { skip: missing.length ? `${missing.join(' and ')} not installed (apt-get install -y dnsperf dnsmasq-base)` : false }, async (t) => {
  const out = mkdtempSync(join(tmpdir(), 'nn-bench-dns-test-'));
  t.teardown(() => rmSync(out, { recursive: true, force: true }));
  const p = spawn(process.execPath, ['--import', 'tsx', join(here, 'run.ts'), '--smoke', '--out-dir', out], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  p.stderr.on('data', (d: Buffer) => (stderr = `${stderr}${d.toString()}`.slice(-6000)));
  const code = await new Promise<number | null>((r) => p.on('close', (c) => r(c)));
  t.equal(code, 0, 'exit 0', { stderr });
  const json = readdirSync(out).find((f) => /^dns-\d{4}-\d\d-\d\d\.json$/.test(f));
  t.ok(json, 'the results JSON');
  t.ok(readdirSync(out).some((f) => f.endsWith('.svg')) && readdirSync(out).some((f) => f.endsWith('.png')), 'the chart, svg and png');
  if (!json) return;
  const r = JSON.parse(readFileSync(join(out, json), 'utf8')) as DnsBenchResult;
  t.same(r.notes, [], 'no notes: nothing failed, nothing unexpected');
  t.equal(r.load.services, 1000);
  t.equal(r.cases.length, CASES.length * 2, 'three cases × two servers');
  for (const c of CASES) {
    for (const s of ['nodenet', 'dnsmasq'] as const) {
      const x = r.cases.find((y) => y.case === c && y.server === s);
      t.ok(x, `${c} ${s} measured`);
      if (!x) continue;
      t.equal(x.lost, 0, `${c} ${s}: no query lost`);
      t.equal(x.wrongRcode, 0, `${c} ${s}: every answer's rcode as expected`);
      t.equal(x.completed, x.sent, `${c} ${s}: every query answered`);
      if (c === 'external') t.equal(x.upstreamQueries, 0, `${s}: the external names came from its cache`);
    }
  }
  for (const [k, v] of Object.entries(figures(r))) t.ok(Number.isFinite(v) && v > 0, `${k} is a positive number (${v})`);
  t.equal(r.freshness.length, 4, 'create and delete, for both servers');
  for (const f of r.freshness) {
    t.equal(f.samplesMs.length, 3, `${f.server} ${f.change}: 3 samples`);
    t.equal(f.timeouts, 0, `${f.server} ${f.change}: every change seen`);
  }
  t.same(r.noReload, { waitedMs: 500, stillStale: true }, 'dnsmasq does not see a rewritten hosts file without SIGHUP');
  t.equal(r.verification.length, 2);
  for (const v of r.verification) t.equal(v.agreed, v.checked, `${v.server}: the sampled names resolve to the API's ClusterIPs, the upstream's addresses, NXDOMAIN`);
  t.match(stdout, /### \(a\) cluster names/, 'the report on stdout');
});
