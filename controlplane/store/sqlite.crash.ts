/**
 * controlplane/store/sqlite.crash: test support: runs sqlite.child.ts as a
 * writer over FILE and kills it with SIGKILL after a number of
 * acknowledged writes that varies with the round. Used by the storage
 * contract's crash test for the SQLite backend.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CHILD = fileURLToPath(new URL('./sqlite.child.ts', import.meta.url));

export interface KilledWriter {
  /** The revision the writer found at start. */
  readonly startRev: number;
  /** The acknowledged writes, in the order printed. */
  readonly acked: readonly { key: string; rev: number }[];
}

export async function killWriterMidStream(file: string, round: number): Promise<KilledWriter> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, 'writes', file, String(round)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const acked: { key: string; rev: number }[] = [];
  let startRev = -1;
  let buf = '';
  // Kill at a varying point: after 40 to 230 acknowledgements.
  const killAt = 40 + ((round * 37) % 190);
  await new Promise<void>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', () => resolve());
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const [w, k, r] = buf.slice(0, i).split(' ');
        buf = buf.slice(i + 1);
        if (w === 'ready') startRev = Number(k);
        if (w === 'ack') {
          acked.push({ key: k!, rev: Number(r) });
          if (acked.length === killAt) child.kill('SIGKILL');
        }
      }
    });
  });
  if (startRev < 0) throw new Error(`round ${round}: the writer never opened the storage`);
  return { startRev, acked };
}
