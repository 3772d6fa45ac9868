/** The proxy driven by the API in iptables mode over the host-gw overlay (endpoints on remote nodes reached by plain routes): see cluster-api-suite.ts. Root only. */
import { clusterApiSuite } from './cluster-api-suite.js';

clusterApiSuite('iptables', 'host-gw');
