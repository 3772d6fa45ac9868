/**
 * The executor against the real conntrack tool and kernel table, inside a
 * throwaway network namespace: entries are inserted with `conntrack -I`
 * (as the DNAT'd flow a proxied UDP packet leaves), then deleted through
 * ConntrackExecutor, and the table is listed to see exactly which went.
 */
import t from 'tap';
import { SpawnRunner } from '../../exec/runner.js';
import { parseIPv4 } from '../../../../lib/net/ip.js';
import { ConntrackExecutor } from './conntrack.js';

const runner = new SpawnRunner();
const ns = `nn-ct-${process.pid}-${Math.floor(Math.random() * 1e6).toString(36)}`;
const nsPath = `/var/run/netns/${ns}`;
const ip = parseIPv4;

async function insert(src: string, dst: string, sport: number, dport: number, replySrc: string, replyPort: number): Promise<void> {
  await runner.run(
    ['conntrack', '-I', '-p', 'udp', '-s', src, '-d', dst, '--sport', String(sport), '--dport', String(dport), '-r', replySrc, '-q', src, '--reply-port-src', String(replyPort), '--reply-port-dst', String(sport), '-t', '120'],
    { netns: nsPath },
  );
}

async function list(): Promise<string[]> {
  const r = await runner.run(['conntrack', '-L', '-p', 'udp'], { netns: nsPath, allowFailure: true });
  return r.stdout
    .split('\n')
    .filter((l) => l.startsWith('udp'))
    .map((l) => {
      const dst = /dst=(\S+)/.exec(l)?.[1];
      const dport = /dport=(\d+)/.exec(l)?.[1];
      const rsrc = [...l.matchAll(/src=(\S+)/g)][1]?.[1];
      return `${dst}:${dport}>${rsrc}`;
    })
    .sort();
}

t.before(async () => {
  await runner.run(['ip', 'netns', 'add', ns]);
});
t.teardown(async () => {
  const pids = await runner.run(['ip', 'netns', 'pids', ns], { allowFailure: true });
  for (const p of pids.stdout.split('\n').filter(Boolean)) await runner.run(['kill', '-9', p], { allowFailure: true });
  await runner.run(['ip', 'netns', 'del', ns], { allowFailure: true });
});

t.test('deletes exactly the flows to a Service IP:port DNATed to one endpoint, and NodePort flows', async (t) => {
  await insert('10.244.0.7', '10.96.0.10', 4000, 53, '10.244.1.5', 53);
  await insert('10.244.0.7', '10.96.0.10', 4001, 53, '10.244.2.5', 53);
  await insert('10.244.0.7', '10.96.0.10', 4002, 5353, '10.244.1.5', 5353);
  await insert('192.168.77.200', '192.168.77.11', 4003, 30053, '10.244.1.5', 53);
  await insert('192.168.77.200', '192.168.77.11', 4004, 30053, '10.244.2.5', 53);
  t.equal((await list()).length, 5);

  const ct = new ConntrackExecutor({ runner, netns: nsPath });
  t.equal(await ct.deleteUDPEndpoint({ kind: 'serviceIP', ip: ip('10.96.0.10'), port: 53 }, ip('10.244.1.5')), 1);
  t.same(await list(), ['10.96.0.10:5353>10.244.1.5', '10.96.0.10:53>10.244.2.5', '192.168.77.11:30053>10.244.1.5', '192.168.77.11:30053>10.244.2.5']);
  t.equal(await ct.deleteUDPEndpoint({ kind: 'serviceIP', ip: ip('10.96.0.10'), port: 53 }, ip('10.244.1.5')), 0, 'idempotent: nothing left to delete is success');
  t.equal(await ct.deleteUDPEndpoint({ kind: 'nodePort', port: 30053 }, ip('10.244.2.5')), 1);
  t.same(await list(), ['10.96.0.10:5353>10.244.1.5', '10.96.0.10:53>10.244.2.5', '192.168.77.11:30053>10.244.1.5']);
  t.equal(await ct.deleteUDPService({ kind: 'serviceIP', ip: ip('10.96.0.10'), port: 53 }), 1);
  t.equal(await ct.deleteUDPService({ kind: 'nodePort', port: 30053 }), 1);
  t.same(await list(), ['10.96.0.10:5353>10.244.1.5']);
});

t.test('a missing namespace is an error, not "0 deleted"', async (t) => {
  const ct = new ConntrackExecutor({ runner, netns: `/var/run/netns/${ns}-absent` });
  await t.rejects(ct.deleteUDPService({ kind: 'nodePort', port: 30053 }), { code: 'NN_ERR_EXEC' });
});
