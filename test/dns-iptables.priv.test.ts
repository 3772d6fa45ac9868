/** Cluster DNS end to end in iptables mode, with real packets from Pods: see dns-suite.ts. Root only. */
import { dnsSuite } from './dns-suite.js';

dnsSuite('iptables');
