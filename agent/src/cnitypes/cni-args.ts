/**
 * cnitypes/cni-args: CNI_ARGS, "KEY=VALUE;KEY2=VALUE2" (SPEC: alphanumeric
 * key-value pairs separated by semicolons). Kubernetes passes
 * K8S_POD_NAMESPACE, K8S_POD_NAME, K8S_POD_INFRA_CONTAINER_ID, K8S_POD_UID;
 * host-local reads IP=. Empty segments are skipped; a segment without '=' or
 * with an empty key is an error (CNI 4: CNI_ARGS comes from the environment).
 * Values may contain '=' (everything after the first '=' is the value).
 */
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';

export function parseCniArgs(args: string): ReadonlyMap<string, string> {
  const out = new Map<string, string>();
  for (const seg of args.split(';')) {
    if (seg === '') continue;
    const eq = seg.indexOf('=');
    if (eq <= 0) {
      throw new NodenetError(ErrorCode.InvalidEnvironment, `CNI_ARGS: invalid pair ${JSON.stringify(seg)}`, { details: 'CNI_ARGS' });
    }
    out.set(seg.slice(0, eq), seg.slice(eq + 1));
  }
  return out;
}
