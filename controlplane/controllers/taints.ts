/**
 * controlplane/controllers/taints: taints and tolerations as the scheduler
 * and the node lifecycle controller both read them: one ToleratesTaint
 * (k8s.io/api/core/v1 toleration.go), so that a Pod the scheduler placed
 * because it tolerates a taint is never evicted for it. Pure.
 */

export interface Taint {
  readonly key: string;
  readonly value?: string;
  readonly effect: string;
  readonly timeAdded?: string;
}

export interface Toleration {
  readonly key?: string;
  readonly operator?: string;
  readonly value?: string;
  readonly effect?: string;
  readonly tolerationSeconds?: number;
}

/**
 * v1 Toleration.ToleratesTaint: an empty effect matches every effect, an empty key every key; Exists ignores the
 * value, Equal (or no operator) compares it. (An empty key with Equal never gets here: validation refuses it.)
 */
export function toleratesTaint(tol: Toleration, taint: Taint): boolean {
  if (tol.effect && tol.effect !== taint.effect) return false;
  if (tol.key && tol.key !== taint.key) return false;
  switch (tol.operator ?? '') {
    case 'Exists': return true;
    case '':
    case 'Equal': return (tol.value ?? '') === (taint.value ?? '');
    default: return false;
  }
}
