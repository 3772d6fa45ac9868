/**
 * ipam/resolv-conf: the DNS settings of a resolv.conf, as host-local reads
 * its `resolvConf` file into the result's `dns`. Pure.
 *
 * `nameserver ADDR`, `domain NAME`, `search NAME...`, `options OPT...`;
 * comments (# or ;) and other keywords are skipped; a later `domain` wins,
 * and a later `search` replaces an earlier one, as the resolver does.
 */
export interface ResolvConf {
  nameservers?: string[];
  domain?: string;
  search?: string[];
  options?: string[];
}

export function parseResolvConf(text: string): ResolvConf {
  const out: ResolvConf = {};
  for (const raw of text.split('\n')) {
    const line = raw.replace(/[#;].*$/, '').trim();
    if (!line) continue;
    const [key, ...rest] = line.split(/\s+/);
    if (rest.length === 0) continue;
    switch (key) {
      case 'nameserver':
        (out.nameservers ??= []).push(rest[0]!);
        break;
      case 'domain':
        out.domain = rest[0]!;
        break;
      case 'search':
        out.search = rest;
        break;
      case 'options':
        (out.options ??= []).push(...rest);
        break;
    }
  }
  return out;
}
