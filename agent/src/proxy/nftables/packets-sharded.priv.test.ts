/**
 * packets.priv.test.ts's real packets in the sharded layout (NftablesRenderOptions.shards: 4), plus its
 * switch between the layouts on a live node.
 */
process.env['NODENET_TEST_NFT_SHARDS'] = '4';
await import('./packets.priv.test.js');
