/**
 * controlplane/store/spec: which storage backend a control plane runs on,
 * from `--storage` (`sqlite:DIR` or `etcd:URL[,URL...]`), and opening it.
 * The SQLite backend is the embedded default, in the data directory; etcd
 * is for several API servers on one cluster state.
 */
import { join } from 'node:path';
import { ErrorCode, NodenetError } from '../../lib/errors/errors.js';
import type { Logger } from '../../lib/log/log.js';
import { EtcdClient, parseEtcdEndpoints } from './etcd/client.js';
import { EtcdStorage } from './etcd/etcd-storage.js';
import { LocalStorage } from './local-storage.js';
import { SqlitePersistence } from './sqlite-persistence.js';
import type { Storage } from './storage.js';

export type StorageSpec =
  | { readonly kind: 'sqlite'; readonly dir: string | null }
  | { readonly kind: 'etcd'; readonly endpoints: string; readonly prefix: string };

/** `sqlite:DIR`, `sqlite` (the data directory), `etcd:http://H:P,...`. @throws InvalidConfig */
export function parseStorageSpec(text: string, etcdPrefix = '/registry'): StorageSpec {
  const i = text.indexOf(':');
  const kind = i < 0 ? text : text.slice(0, i);
  const rest = i < 0 ? '' : text.slice(i + 1);
  if (kind === 'sqlite') return { kind, dir: rest || null };
  if (kind === 'etcd') {
    parseEtcdEndpoints(rest);
    if (!/^\/[^\s]*[^/\s]$/.test(etcdPrefix)) throw new NodenetError(ErrorCode.InvalidConfig, `--etcd-prefix ${JSON.stringify(etcdPrefix)}: a key prefix such as /registry (starting with /, not ending with one)`);
    return { kind, endpoints: rest, prefix: etcdPrefix };
  }
  throw new NodenetError(ErrorCode.InvalidConfig, `--storage ${JSON.stringify(text)}: sqlite:DIR or etcd:URL[,URL...]`);
}

/** Opens the backend; SQLite takes the data directory's lock (a second control plane on it is refused here). */
export function openStorage(spec: StorageSpec, dataDir: string, log: Logger): Storage {
  if (spec.kind === 'sqlite') return new LocalStorage({ persistence: new SqlitePersistence(join(spec.dir ?? dataDir, 'state.db')), log });
  return new EtcdStorage({ client: new EtcdClient({ endpoints: parseEtcdEndpoints(spec.endpoints) }), prefix: spec.prefix, log });
}

/** The spec as a user would write it (logs). */
export function describeStorage(spec: StorageSpec, dataDir: string): string {
  return spec.kind === 'sqlite' ? `sqlite:${spec.dir ?? dataDir}` : `etcd:${spec.endpoints} (prefix ${spec.prefix})`;
}
