/**
 * bench/dns/parse: dnsperf 2.x's output, read. Pure.
 *
 * dnsperf prints only the mean and standard deviation of latency. With `-v` it also prints one line per
 * query as it completes: `> NOERROR svc-1.ns-1.svc.cluster.local A 0.000322` (rcode, name, type, latency in
 * seconds with µs resolution), or `> T name A` for one that timed out (lost). Those per-query latencies give
 * the p50/p99 (bench/lib/stats's nearest rank). dnsperf 2.10 has no histogram option (`dnsperf -H` lists only
 * num-queries-per-conn, suppress and the DoH ones), hence -v. Measured here: -v does not lower dnsperf's
 * rate (its stdout goes to a file).
 */

export interface DnsperfRun {
  readonly sent: number;
  readonly completed: number;
  readonly lost: number;
  readonly runS: number;
  /** dnsperf's own figure: completed / run time. */
  readonly qps: number;
  /** dnsperf's summary of response codes. */
  readonly rcodes: Readonly<Record<string, number>>;
  readonly avgLatencyMs: number;
  /** Every completed query's latency (ms), in completion order; from -v. */
  readonly latenciesMs: Float64Array;
  /** Response codes counted from the -v lines (a check on the summary). */
  readonly lineRcodes: Readonly<Record<string, number>>;
  /** `> T` lines: queries dnsperf gave up on. */
  readonly timedOut: number;
}

function field(text: string, label: string): number {
  const m = new RegExp(`^\\s*${label.replace(/[()]/g, '\\$&')}:\\s+([\\d.]+)`, 'm').exec(text);
  if (!m) throw new TypeError(`dnsperf output has no "${label}" line`);
  return Number(m[1]);
}

/** `NOERROR 9739 (50.00%), NXDOMAIN 9739 (50.00%)` → { NOERROR: 9739, NXDOMAIN: 9739 }. */
export function parseRcodes(s: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of s.matchAll(/([A-Z]+)\s+(\d+)\s+\([\d.]+%\)/g)) out[m[1]!] = Number(m[2]);
  return out;
}

/** @throws TypeError when the summary is missing (dnsperf failed; the caller adds its stderr) */
export function parseDnsperf(text: string): DnsperfRun {
  const sent = field(text, 'Queries sent');
  const completed = field(text, 'Queries completed');
  const lost = field(text, 'Queries lost');
  const runS = field(text, 'Run time (s)');
  const qps = field(text, 'Queries per second');
  const avg = /^\s*Average Latency \(s\):\s+([\d.]+)/m.exec(text);
  const codes = /^\s*Response codes:(.*)$/m.exec(text);
  const lat: number[] = [];
  const lineRcodes: Record<string, number> = {};
  let timedOut = 0;
  let start = 0;
  // Line by line without splitting the whole text: a 10 s run at 100k qps is a million lines.
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    if (text.charCodeAt(start) === 62 /* > */ && text.charCodeAt(start + 1) === 32) {
      const parts = text.slice(start + 2, end).trim().split(' ');
      if (parts[0] === 'T') timedOut++;
      else if (parts.length >= 4) {
        const s = Number(parts[parts.length - 1]);
        if (Number.isFinite(s)) {
          lat.push(s * 1000);
          lineRcodes[parts[0]!] = (lineRcodes[parts[0]!] ?? 0) + 1;
        }
      }
    }
    start = end + 1;
  }
  return {
    sent, completed, lost, runS, qps,
    rcodes: codes ? parseRcodes(codes[1]!) : {},
    avgLatencyMs: avg ? Number(avg[1]) * 1000 : NaN,
    latenciesMs: Float64Array.from(lat),
    lineRcodes,
    timedOut,
  };
}
