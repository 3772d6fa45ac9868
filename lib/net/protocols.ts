/**
 * net/protocols: IP protocol numbers (IANA) of the transport protocols a
 * Service port can have, by their lowercase names, and ICMP's. One table
 * for the nf_tables encoder and render, the iptables parser and the tracer.
 */
export const L4_PROTOCOL_NUMBERS: Readonly<Record<string, number>> = { tcp: 6, udp: 17, sctp: 132 };

/** The transport protocols and icmp: what iptables' `-p` and xt_ipvs's `--vproto` take by name here. */
export const IP_PROTOCOL_NUMBERS: Readonly<Record<string, number>> = { ...L4_PROTOCOL_NUMBERS, icmp: 1 };
