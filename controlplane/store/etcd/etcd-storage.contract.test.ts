/**
 * The storage contract (../storage.contract.ts) over a real etcd (Debian's
 * etcd-server 3.4.23, one member on loopback ports of its own): the same
 * suite SQLite and the in-memory fake pass. A restart is a SIGKILL of the
 * member and a start on its data; a crash kills it under a stream of
 * writes (5 rounds); a failed write is one etcd itself refuses (a value
 * above its request size limit). Needs no root.
 */
import t from 'tap';
import { EtcdCluster } from '../../testing/etcd.js';
import { storageContract } from '../storage.contract.js';
import type { Storage } from '../storage.js';
import { EtcdStorage } from './etcd-storage.js';

const cluster = await EtcdCluster.start(1);
t.teardown(() => cluster.close());
let n = 0;
const prefixes = new Map<Storage, string>();
const open = (prefix: string) => {
  const s = new EtcdStorage({ client: cluster.client(), prefix });
  prefixes.set(s, prefix);
  return s;
};

storageContract(t, {
  name: 'etcd',
  open: async () => open(`/nn-contract-${n++}`),
  reopen: async (s) => {
    await s.close();
    await cluster.kill(0);
    cluster.start(0);
    await cluster.waitReady();
    return open(prefixes.get(s)!);
  },
  failNextWrite: (s) => void ((s as EtcdStorage).failNext = 1),
  crashRounds: 5,
  crash: async (round) => {
    const prefix = `/nn-crash-${round}`;
    const writer = open(prefix);
    const acked: { key: string; rev: number }[] = [];
    let stop = false;
    let i = 0;
    const loops = Array.from({ length: 4 }, async () => {
      while (!stop) {
        const key = `services/default/c${i++}`;
        try {
          const st = await writer.create(key, { apiVersion: 'v1', kind: 'Service', metadata: { name: key.split('/')[2], namespace: 'default' } });
          acked.push({ key, rev: st.rev });
        } catch {
          stop = true;
        }
      }
    });
    await new Promise((r) => setTimeout(r, 100 + 97 * round));
    await cluster.kill(0);
    stop = true;
    await Promise.all(loops);
    await writer.close();
    cluster.start(0);
    await cluster.waitReady();
    return { acked, storage: open(prefix) };
  },
});
