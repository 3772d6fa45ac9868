/**
 * watch/node-annotations: merge-patches annotations onto this node's own
 * Node object (what flannel's kube subnet manager does with its lease). The
 * Node authorizer lets a node's token patch its own Node, nothing else's.
 * A JSON merge patch touches only the keys it names.
 */
import { CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';

/** A function that merge-patches `annotations` onto Node `nodeName`. */
export function nodeAnnotationPatcher(kc: KubeConfig, nodeName: string): (annotations: Record<string, string>) => Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  return async (annotations) => {
    await core.patchNode({ name: nodeName, body: { metadata: { annotations } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  };
}
