/**
 * bench/lookup/args: `nodenet bench lookup`'s command line, parsed and
 * validated. Pure.
 */
import { FlagError, parseFlags } from '../../agent/src/cli/flags.js';
import { int, list } from '../lib/args.js';
import { LOOKUP_MODES, type LookupMode } from './modes.js';
import { MAX_SERVICES } from './workload.js';

export const LOOKUP_USAGE = `usage: nodenet bench lookup [--modes iptables-legacy,nftables,ipvs] [--sizes 100,1000,5000,10000,30000]
                            [--count 20000] [--seconds 3] [--warmup 200] [--rtt 1000] [--changes 3]
                            [--vm-modes MODES] [--vm-sizes SIZES] [--include FILE.json] [--out DIR] [--no-chart]
How the cost of finding a Service grows with the number of Services, per proxy mode, with real packets:
for each mode and size, one virtual node (a network namespace with its own agent) programs N ClusterIP
Services of 2 endpoints each through its real proxy, then a client pod times new connections (a native
connect()/close() loop: at most --count, for at most --seconds) to the Service matched first and to the
one matched last, and one established connection's round trip. Also the full sync, a one-endpoint
change's sync and the agent's RSS. Modes: iptables (the system's iptables), iptables-legacy, nftables,
ipvs. IPVS needs a kernel with IPVS: without one (this machine) it runs in a qemu VM of Debian's kernel
(test-vm/), together with --vm-modes (default: the other modes asked for) on that same kernel, at
--vm-sizes (default --sizes). --include adds the runs of an earlier result file (e.g. a long VM run) to this
one's table and chart; --modes none runs nothing new. Writes lookup-<date>.json, .svg and .png to --out
(default bench/results/).
Needs root; everything it builds is in its own nn-* namespaces, removed at the end.`;

export interface LookupArgs {
  readonly modes: readonly LookupMode[];
  readonly sizes: readonly number[];
  readonly count: number;
  readonly seconds: number;
  readonly warmup: number;
  readonly rtt: number;
  readonly changes: number;
  /** Modes run in the VM, when one is needed (ipvs without IPVS here). */
  readonly vmModes: readonly LookupMode[] | null;
  readonly vmSizes: readonly number[] | null;
  readonly out: string | null;
  readonly chart: boolean;
  /** Earlier result files whose runs join this one's. */
  readonly include: readonly string[];
}

const STRING_FLAGS = ['modes', 'sizes', 'count', 'seconds', 'warmup', 'rtt', 'changes', 'vm-modes', 'vm-sizes', 'out', 'include'];

function modes(flag: string, v: string): LookupMode[] {
  return list(flag, v).map((m) => {
    if (!(LOOKUP_MODES as readonly string[]).includes(m)) throw new FlagError(`--${flag}: unknown mode ${JSON.stringify(m)} (one of ${LOOKUP_MODES.join(', ')})`);
    return m as LookupMode;
  });
}

function sizes(flag: string, v: string): number[] {
  return list(flag, v).map((s) => int(flag, s.replace(/_/g, ''), 1, MAX_SERVICES)).sort((a, b) => a - b);
}

export function parseLookupArgs(argv: readonly string[]): LookupArgs {
  const p = parseFlags(argv, { ...Object.fromEntries(STRING_FLAGS.map((f) => [f, { type: 'string' } as const])), 'no-chart': { type: 'boolean' } });
  if (p.help) throw new FlagError(LOOKUP_USAGE);
  if (p.positional.length || p.rest.length) throw new FlagError(`unexpected argument ${JSON.stringify(p.positional[0] ?? p.rest[0])}\n${LOOKUP_USAGE}`);
  const f = p.flags;
  const seconds = Number(f.get('seconds') ?? '3');
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 600) throw new FlagError(`--seconds: ${JSON.stringify(f.get('seconds'))} is not a duration in (0, 600]`);
  const out = f.get('out') ?? null;
  if (out === '') throw new FlagError('--out needs a directory');
  const vmModes = f.has('vm-modes') ? modes('vm-modes', f.get('vm-modes')!) : null;
  return {
    modes: f.get('modes') === 'none' ? [] : modes('modes', f.get('modes') ?? 'iptables-legacy,nftables,ipvs'),
    sizes: sizes('sizes', f.get('sizes') ?? '100,1000,5000,10000,30000'),
    count: int('count', f.get('count') ?? '20000', 10, 10_000_000),
    seconds,
    warmup: int('warmup', f.get('warmup') ?? '200', 0, 1_000_000),
    rtt: int('rtt', f.get('rtt') ?? '1000', 0, 1_000_000),
    changes: int('changes', f.get('changes') ?? '3', 0, 100),
    vmModes: vmModes && !vmModes.includes('ipvs') ? [...vmModes, 'ipvs'] : vmModes,
    vmSizes: f.has('vm-sizes') ? sizes('vm-sizes', f.get('vm-sizes')!) : null,
    out,
    chart: !f.has('no-chart'),
    include: f.has('include') ? list('include', f.get('include')!) : [],
  };
}
