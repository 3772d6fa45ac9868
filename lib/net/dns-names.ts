/**
 * net/dns-names: the DNS name rules Kubernetes names follow (pure): RFC 1123
 * labels and subdomains, RFC 1035 labels.
 */
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** RFC 1123 label: lowercase alphanumerics and '-', starting and ending alphanumeric, at most 63 characters. */
export function isDNS1123Label(s: string): boolean {
  return s.length <= 63 && DNS1123_LABEL.test(s);
}

/** RFC 1035 label (Service names): as a 1123 label but starting with a letter. */
export function isDNS1035Label(s: string): boolean {
  return s.length <= 63 && DNS1035_LABEL.test(s);
}

/** RFC 1123 subdomain (EndpointSlice names): dot-separated labels, at most 253 characters. */
export function isDNS1123Subdomain(s: string): boolean {
  return s.length <= 253 && DNS1123_SUBDOMAIN.test(s);
}
