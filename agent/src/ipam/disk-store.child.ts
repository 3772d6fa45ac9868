/**
 * ipam/disk-store.child: a test fixture run as a separate process by
 * disk-store.test.ts (`node --import tsx disk-store.child.ts MODE ...`), so
 * that the test can SIGKILL it at an arbitrary moment. Not imported by the agent.
 *
 *   adds DATADIR NETWORK SUBNET PREFIX COUNT
 *     COUNT concurrent ADDs of PREFIX<i>/eth0; every third one is DELeted
 *     after its ADD. Prints "ready", then "ok <id> <ip>" after each ADD
 *     returns and "del <id>" after each DEL returns, then "done", then idles.
 *   hold-lock DATADIR NETWORK
 *     Takes the store lock, prints "locked", and holds it until killed.
 *
 * Lines are written with writeSync, so a line the parent reads was printed
 * before the kill, i.e. after the operation it reports had returned.
 */
import { writeSync } from 'node:fs';
import { parseIpamConf } from './config.js';
import { DiskStore } from './disk-store.js';
import { createDiskIpam } from './ipam.js';

const say = (s: string): void => void writeSync(1, `${s}\n`);
const idle = (): Promise<never> => new Promise(() => void setInterval(() => undefined, 1 << 30));

async function main(argv: string[]): Promise<void> {
  const [mode, dataDir, network, subnet, prefix, count] = argv;
  if (mode === 'hold-lock' && dataDir && network) {
    const store = new DiskStore(dataDir, network);
    await store.withLock(async () => {
      say('locked');
      await idle();
    });
    return;
  }
  if (mode === 'adds' && dataDir && network && subnet && prefix && count) {
    const ipam = createDiskIpam(dataDir);
    const conf = parseIpamConf(network, { type: 'host-local', subnet });
    say('ready');
    await Promise.all(
      Array.from({ length: Number(count) }, async (_, i) => {
        const id = `${prefix}${i}`;
        const r = await ipam.add(conf, { id, ifName: 'eth0' });
        say(`ok ${id} ${r.ips[0]!.address.split('/')[0]}`);
        if (i % 3 === 0) {
          await ipam.del(network, id, 'eth0');
          say(`del ${id}`);
        }
      }),
    );
    say('done');
    await idle();
    return;
  }
  throw new Error(`usage: adds DATADIR NETWORK SUBNET PREFIX COUNT | hold-lock DATADIR NETWORK (got ${argv.join(' ')})`);
}

main(process.argv.slice(2)).catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
