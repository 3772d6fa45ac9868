/**
 * bench/overlay/rr.child: a TCP request/response round trip (netperf's
 * TCP_RR with 1-byte messages), both ends in Node. Run by run.ts inside a
 * pod's or node's namespace (nsenter), never in the root namespace:
 *
 *   node --import tsx rr.child.ts server PORT
 *   node --import tsx rr.child.ts client HOST PORT COUNT
 *
 * The server echoes every byte on every connection and prints "listening"
 * once bound. The client connects (TCP_NODELAY), makes 50 warm-up round
 * trips, then COUNT timed ones, each a 1-byte write and the 1-byte answer,
 * and prints one JSON line {"rttUs":[...]}. Both ends' event loops are in
 * the figure: it is what a Node service sees, some tens of µs above ping.
 */
import { connect, createServer, type Socket } from 'node:net';

const [mode, ...rest] = process.argv.slice(2);
const WARMUP = 50;

function server(port: number): void {
  const srv = createServer((s) => {
    s.setNoDelay(true);
    s.on('data', (b) => s.write(b));
    s.on('error', () => s.destroy());
  });
  srv.listen(port, () => process.stdout.write('listening\n'));
  process.on('SIGTERM', () => srv.close(() => process.exit(0)));
}

async function client(host: string, port: number, count: number): Promise<void> {
  const s: Socket = await new Promise((resolve, reject) => {
    const c = connect({ host, port, noDelay: true, timeout: 5000 }, () => resolve(c));
    c.once('error', reject);
    c.once('timeout', () => reject(new Error(`connect to ${host}:${port} timed out`)));
  });
  s.setTimeout(0);
  const out: number[] = [];
  const one = Buffer.from('x');
  let waiting: (() => void) | null = null;
  s.on('data', () => waiting?.());
  for (let i = 0; i < WARMUP + count; i++) {
    const t0 = process.hrtime.bigint();
    await new Promise<void>((r) => {
      waiting = r;
      s.write(one);
    });
    if (i >= WARMUP) out.push(Math.round(Number(process.hrtime.bigint() - t0) / 100) / 10);
  }
  s.destroy();
  process.stdout.write(`${JSON.stringify({ rttUs: out })}\n`);
}

if (mode === 'server' && rest.length === 1) {
  server(Number(rest[0]));
} else if (mode === 'client' && rest.length === 3) {
  await client(rest[0]!, Number(rest[1]), Number(rest[2]));
} else {
  process.stderr.write('usage: rr.child.ts server PORT | client HOST PORT COUNT\n');
  process.exitCode = 2;
}
