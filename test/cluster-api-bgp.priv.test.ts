/** The proxy driven by the API in iptables mode over the bgp backend (endpoints on remote nodes reached by BIRD's routes, learned over iBGP): see cluster-api-suite.ts. Root only. */
import { clusterApiSuite } from './cluster-api-suite.js';

clusterApiSuite('iptables', 'bgp');
