/**
 * controlplane/api/protobuf-testdata: request bodies the real kubectl (1.32,
 * through /usr/bin/kubectl's dispatcher) sent to a logging loopback proxy in
 * front of `nodenet control-plane`, base64; beside each, what the same
 * command prints with `--dry-run=client -o json` (the JSON it would have sent).
 */
export interface KubectlCapture {
  /** the kubectl arguments */
  readonly args: string;
  readonly method: 'POST';
  readonly path: string;
  readonly protobuf: string;
  readonly json: string;
}

export const KUBECTL_CAPTURES: readonly KubectlCapture[] = [
  {
    args: 'create deployment web --image=nodenet/host -- sleep 1000',
    method: 'POST',
    path: '/apis/apps/v1/namespaces/default/deployments',
    protobuf: 'azhzAAoVCgdhcHBzL3YxEgpEZXBsb3ltZW50Er8BCh8KA3dlYhIAGgAiACoAMgA4AEIAWgoKA2FwcBIDd2ViEo0BCAESDAoKCgNhcHASA3dlYhpzChwKABIAGgAiACoAMgA4AEIAWgoKA2FwcBIDd2ViElMSNQoEaG9zdBIMbm9kZW5ldC9ob3N0GgVzbGVlcBoEMTAwMCoAQgBqAHIAgAEAiAEAkAEAogEAGgAyAEIASgBSAFgAYABoAIIBAIoBAJoBAMIBACICCgAoADgAGgwIABAAGAAgACgAOAAaACIA',
    json: '{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"web","creationTimestamp":null,"labels":{"app":"web"}},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"creationTimestamp":null,"labels":{"app":"web"}},"spec":{"containers":[{"name":"host","image":"nodenet/host","command":["sleep","1000"],"resources":{}}]}},"strategy":{}},"status":{}}',
  },
  {
    args: 'create deployment w3 --image=nodenet/host --replicas=3 --port=8080',
    method: 'POST',
    path: '/apis/apps/v1/namespaces/default/deployments',
    protobuf: 'azhzAAoVCgdhcHBzL3YxEgpEZXBsb3ltZW50ErsBCh0KAnczEgAaACIAKgAyADgAQgBaCQoDYXBwEgJ3MxKLAQgDEgsKCQoDYXBwEgJ3MxpyChsKABIAGgAiACoAMgA4AEIAWgkKA2FwcBICdzMSUxI1CgRob3N0Egxub2RlbmV0L2hvc3QqADILCgAQABiQPyIAKgBCAGoAcgCAAQCIAQCQAQCiAQAaADIAQgBKAFIAWABgAGgAggEAigEAmgEAwgEAIgIKACgAOAAaDAgAEAAYACAAKAA4ABoAIgA=',
    json: '{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"w3","creationTimestamp":null,"labels":{"app":"w3"}},"spec":{"replicas":3,"selector":{"matchLabels":{"app":"w3"}},"template":{"metadata":{"creationTimestamp":null,"labels":{"app":"w3"}},"spec":{"containers":[{"name":"host","image":"nodenet/host","ports":[{"containerPort":8080}],"resources":{}}]}},"strategy":{}},"status":{}}',
  },
  {
    args: 'create deployment multi --image=a --image=b',
    method: 'POST',
    path: '/apis/apps/v1/namespaces/default/deployments',
    protobuf: 'azhzAAoVCgdhcHBzL3YxEgpEZXBsb3ltZW50EsgBCiMKBW11bHRpEgAaACIAKgAyADgAQgBaDAoDYXBwEgVtdWx0aRKSAQgBEg4KDAoDYXBwEgVtdWx0aRp2Ch4KABIAGgAiACoAMgA4AEIAWgwKA2FwcBIFbXVsdGkSVBIaCgFhEgFhKgBCAGoAcgCAAQCIAQCQAQCiAQASGgoBYhIBYioAQgBqAHIAgAEAiAEAkAEAogEAGgAyAEIASgBSAFgAYABoAIIBAIoBAJoBAMIBACICCgAoADgAGgwIABAAGAAgACgAOAAaACIA',
    json: '{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"multi","creationTimestamp":null,"labels":{"app":"multi"}},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"multi"}},"template":{"metadata":{"creationTimestamp":null,"labels":{"app":"multi"}},"spec":{"containers":[{"name":"a","image":"a","resources":{}},{"name":"b","image":"b","resources":{}}]}},"strategy":{}},"status":{}}',
  },
  {
    args: 'create namespace foo',
    method: 'POST',
    path: '/api/v1/namespaces',
    protobuf: 'azhzAAoPCgJ2MRIJTmFtZXNwYWNlEhsKEwoDZm9vEgAaACIAKgAyADgAQgASABoCCgAaACIA',
    json: '{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"foo","creationTimestamp":null},"spec":{},"status":{}}',
  },
  {
    args: 'create service clusterip s1 --tcp=80:8080 --tcp=443',
    method: 'POST',
    path: '/api/v1/namespaces/default/services',
    protobuf: 'azhzAAoNCgJ2MRIHU2VydmljZRKAAQodCgJzMRIAGgAiACoAMgA4AEIAWgkKA2FwcBICczESWwobCgc4MC04MDgwEgNUQ1AYUCIHCAAQkD8aACgAChgKAzQ0MxIDVENQGLsDIgcIABC7AxoAKAASCQoDYXBwEgJzMRoAIglDbHVzdGVySVA6AEIAUgBaAGAAaAAaAgoAGgAiAA==',
    json: '{"kind":"Service","apiVersion":"v1","metadata":{"name":"s1","creationTimestamp":null,"labels":{"app":"s1"}},"spec":{"ports":[{"name":"80-8080","protocol":"TCP","port":80,"targetPort":8080},{"name":"443","protocol":"TCP","port":443,"targetPort":443}],"selector":{"app":"s1"},"type":"ClusterIP"},"status":{"loadBalancer":{}}}',
  },
  {
    args: 'create service clusterip headless --clusterip=None',
    method: 'POST',
    path: '/api/v1/namespaces/default/services',
    protobuf: 'azhzAAoNCgJ2MRIHU2VydmljZRJfCikKCGhlYWRsZXNzEgAaACIAKgAyADgAQgBaDwoDYXBwEghoZWFkbGVzcxIuEg8KA2FwcBIIaGVhZGxlc3MaBE5vbmUiCUNsdXN0ZXJJUDoAQgBSAFoAYABoABoCCgAaACIA',
    json: '{"kind":"Service","apiVersion":"v1","metadata":{"name":"headless","creationTimestamp":null,"labels":{"app":"headless"}},"spec":{"selector":{"app":"headless"},"clusterIP":"None","type":"ClusterIP"},"status":{"loadBalancer":{}}}',
  },
  {
    args: 'create service nodeport s2 --tcp=80:8080 --node-port=30080',
    method: 'POST',
    path: '/api/v1/namespaces/default/services',
    protobuf: 'azhzAAoNCgJ2MRIHU2VydmljZRJnCh0KAnMyEgAaACIAKgAyADgAQgBaCQoDYXBwEgJzMhJCCh0KBzgwLTgwODASA1RDUBhQIgcIABCQPxoAKIDrARIJCgNhcHASAnMyGgAiCE5vZGVQb3J0OgBCAFIAWgBgAGgAGgIKABoAIgA=',
    json: '{"kind":"Service","apiVersion":"v1","metadata":{"name":"s2","creationTimestamp":null,"labels":{"app":"s2"}},"spec":{"ports":[{"name":"80-8080","protocol":"TCP","port":80,"targetPort":8080,"nodePort":30080}],"selector":{"app":"s2"},"type":"NodePort"},"status":{"loadBalancer":{}}}',
  },
  {
    args: 'create service loadbalancer s3 --tcp=80:8080',
    method: 'POST',
    path: '/api/v1/namespaces/default/services',
    protobuf: 'azhzAAoNCgJ2MRIHU2VydmljZRJpCh0KAnMzEgAaACIAKgAyADgAQgBaCQoDYXBwEgJzMxJEChsKBzgwLTgwODASA1RDUBhQIgcIABCQPxoAKAASCQoDYXBwEgJzMxoAIgxMb2FkQmFsYW5jZXI6AEIAUgBaAGAAaAAaAgoAGgAiAA==',
    json: '{"kind":"Service","apiVersion":"v1","metadata":{"name":"s3","creationTimestamp":null,"labels":{"app":"s3"}},"spec":{"ports":[{"name":"80-8080","protocol":"TCP","port":80,"targetPort":8080}],"selector":{"app":"s3"},"type":"LoadBalancer"},"status":{"loadBalancer":{}}}',
  },
  {
    args: 'create service externalname s4 --external-name=x.example.com --tcp=80',
    method: 'POST',
    path: '/api/v1/namespaces/default/services',
    protobuf: 'azhzAAoNCgJ2MRIHU2VydmljZRJwCh0KAnM0EgAaACIAKgAyADgAQgBaCQoDYXBwEgJzNBJLChUKAjgwEgNUQ1AYUCIGCAAQUBoAKAASCQoDYXBwEgJzNBoAIgxFeHRlcm5hbE5hbWU6AEIAUg14LmV4YW1wbGUuY29tWgBgAGgAGgIKABoAIgA=',
    json: '{"kind":"Service","apiVersion":"v1","metadata":{"name":"s4","creationTimestamp":null,"labels":{"app":"s4"}},"spec":{"ports":[{"name":"80","protocol":"TCP","port":80,"targetPort":80}],"selector":{"app":"s4"},"type":"ExternalName","externalName":"x.example.com"},"status":{"loadBalancer":{}}}',
  },
];
