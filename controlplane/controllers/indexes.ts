/**
 * controlplane/controllers/indexes: the store indexes the controllers share
 * (client-go's index functions: `cache.MetaNamespaceIndexFunc` is built
 * into the watch cache's sorted lists; these are the others). Each controller
 * adds the ones it asks (WatchCache.addIndex is a no-op for one already there),
 * so a read on the write path costs the size of its answer, never the
 * size of the store. Pure.
 */
import type { IndexFunc } from '../store/indexer.js';
import type { Stored } from '../store/types.js';
import { obj } from '../../lib/json/loose.js';


/** Pods by `spec.nodeName` (the kubelet's and the node lifecycle controller's field selector). */
export const POD_NODE_NAME = 'spec.nodeName';
export const podNodeName: IndexFunc = (s: Stored) => {
  const n = obj(s.object['spec'])?.['nodeName'];
  return typeof n === 'string' && n ? [n] : [];
};

/** Objects by the uids their ownerReferences name (the garbage collector's dependents; controllers' owned objects). */
export const OWNER_UID = 'metadata.ownerReferences.uid';
export const ownerUids: IndexFunc = (s: Stored) => {
  const refs = s.object.metadata?.['ownerReferences'];
  if (!Array.isArray(refs)) return [];
  const out: string[] = [];
  for (const r of refs) {
    const uid = obj(r)?.['uid'];
    if (typeof uid === 'string' && uid && !out.includes(uid)) out.push(uid);
  }
  return out;
};
