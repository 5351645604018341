// kafkajs against kafka-net: one scenario per run, its observations printed as
// one JSON line prefixed with "RESULT " (kafkajs logs on the same stdout).
//
//   node scenarios.js SCENARIO BOOTSTRAP TOPIC_OR_GROUP_PREFIX
//
// The Python side (tests/integration/test_broker_kafkajs.py) starts the broker,
// runs one scenario in a subprocess with a timeout and asserts exact values.
// Every step is bounded: kafkajs' own timeouts are short and the scenarios stop
// by themselves once they have seen what they wait for.
"use strict";

const { Kafka, logLevel, CompressionTypes } = require("kafkajs");

const [scenario, bootstrap, prefix] = process.argv.slice(2);

const kafka = new Kafka({
  clientId: "kafka-net-kafkajs",
  brokers: [bootstrap],
  logLevel: logLevel.ERROR,
  connectionTimeout: 3000,
  requestTimeout: 10000,
  retry: { retries: 3, initialRetryTime: 100 },
});

function report(result) {
  process.stdout.write("RESULT " + JSON.stringify(result) + "\n");
}

// Resolves once check() holds, polling every 20 ms; rejects after limitMs so a
// broken broker fails the test instead of hanging it.
function waitFor(check, limitMs, what) {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const timer = setInterval(() => {
      if (check()) {
        clearInterval(timer);
        resolve();
      } else if (Date.now() - started > limitMs) {
        clearInterval(timer);
        reject(new Error("timed out waiting for " + what));
      }
    }, 20);
  });
}

async function withAdmin(body) {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return await body(admin);
  } finally {
    await admin.disconnect();
  }
}

async function produce(topic, messages, options = {}) {
  const producer = kafka.producer(options.producer || {});
  await producer.connect();
  try {
    return await producer.send({ topic, messages, acks: -1,
                                 compression: options.compression || CompressionTypes.None });
  } finally {
    await producer.disconnect();
  }
}

// Consumes `count` messages of `topic` from the beginning in group `groupId`;
// returns them as plain objects in arrival order.
async function consume(topic, groupId, count, extra = {}) {
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100, ...extra });
  const seen = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        const headers = {};
        for (const [k, v] of Object.entries(message.headers || {})) headers[k] = v.toString();
        seen.push({ partition, offset: Number(message.offset),
                    key: message.key && message.key.toString(),
                    value: message.value && message.value.toString(), headers });
      },
    });
    await waitFor(() => seen.length >= count, 20000, `${count} messages of ${topic}`);
  } finally {
    await consumer.disconnect();
  }
  return seen;
}

const SCENARIOS = {
  // Topics with configs, the config APIs, describeCluster and deleteTopics.
  async admin() {
    const topic = `${prefix}-admin`;
    return withAdmin(async (admin) => {
      const created = await admin.createTopics({
        waitForLeaders: true,
        topics: [{ topic, numPartitions: 3,
                   configEntries: [{ name: "retention.ms", value: "86400000" }] }],
      });
      const describe = async () => {
        const res = await admin.describeConfigs({
          includeSynonyms: false,
          resources: [{ type: 2, name: topic, configNames: ["retention.ms", "cleanup.policy"] }],
        });
        const out = {};
        for (const e of res.resources[0].configEntries) out[e.configName] = e.configValue;
        return out;
      };
      const before = await describe();
      await admin.alterConfigs({
        validateOnly: false,
        resources: [{ type: 2, name: topic, configEntries: [{ name: "retention.ms", value: "3600000" }] }],
      });
      const after = await describe();
      let invalid = null;
      try {
        await admin.alterConfigs({
          resources: [{ type: 2, name: topic, configEntries: [{ name: "cleanup.policy", value: "nonsense" }] }],
        });
      } catch (e) {
        invalid = e.type || e.name;
      }
      const cluster = await admin.describeCluster();
      const meta = await admin.fetchTopicMetadata({ topics: [topic] });
      const partitions = meta.topics[0].partitions.length;
      await admin.deleteTopics({ topics: [topic], timeout: 5000 });
      const listed = await admin.listTopics();
      return { created, before, after, invalid, partitions,
               brokers: cluster.brokers.length, controller: cluster.controller,
               stillListed: listed.includes(topic) };
    });
  },

  // Ten records in one batch with known timestamps: offsets by time per record,
  // then deleteTopicRecords moves the log start offset.
  async offsets() {
    const topic = `${prefix}-offsets`;
    const base = Date.now() - 60000;
    await withAdmin((admin) => admin.createTopics({ waitForLeaders: true, topics: [{ topic }] }));
    await produce(topic, Array.from({ length: 10 }, (_, i) => ({
      value: `v${i}`, timestamp: String(base + i * 1000) })));
    return withAdmin(async (admin) => {
      const byTime = [];
      for (const i of [0, 5, 9]) {
        const r = await admin.fetchTopicOffsetsByTimestamp(topic, base + i * 1000);
        byTime.push(Number(r[0].offset));
      }
      const pastEnd = await admin.fetchTopicOffsetsByTimestamp(topic, base + 100000);
      await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: "4" }] });
      const offsets = await admin.fetchTopicOffsets(topic);
      return { byTime, pastEnd: Number(pastEnd[0].offset),
               low: Number(offsets[0].low), high: Number(offsets[0].high) };
    });
  },

  // Produce with gzip and headers, consume through a group, commit, then the
  // admin view of the group's offsets, and deleteGroups.
  async produceConsume() {
    const topic = `${prefix}-pc`;
    const groupId = `${prefix}-pc-group`;
    const messages = Array.from({ length: 20 }, (_, i) => ({
      key: `k${i}`, value: `kafkajs value ${i} `.repeat(4), headers: { seq: String(i) } }));
    const sent = await produce(topic, messages, { compression: CompressionTypes.GZIP });
    const seen = await consume(topic, groupId, messages.length);
    return withAdmin(async (admin) => {
      const committed = await admin.fetchOffsets({ groupId, topics: [topic] });
      const groups = (await admin.listGroups()).groups.map((g) => g.groupId);
      const deleted = await admin.deleteGroups([groupId]);
      let again = null;
      try {
        await admin.deleteGroups([groupId]);
      } catch (e) {
        again = e.groups ? e.groups.map((g) => g.error && g.error.type) : [e.type];
      }
      return { sent: sent.map((r) => ({ partition: r.partition, errorCode: r.errorCode })),
               seen, committed: committed[0].partitions.map((p) => Number(p.offset)),
               listed: groups.includes(groupId),
               deleted: deleted.map((d) => ({ groupId: d.groupId, errorCode: d.errorCode })),
               again };
    });
  },

  // Two members of one group share a 4-partition topic; each gets a disjoint
  // half once the group has settled.
  async group() {
    const topic = `${prefix}-group`;
    const groupId = `${prefix}-group-g`;
    await withAdmin((admin) => admin.createTopics({
      waitForLeaders: true, topics: [{ topic, numPartitions: 4 }] }));
    const members = [0, 1].map(() => kafka.consumer({
      groupId, maxWaitTimeInMs: 100, sessionTimeout: 10000, rebalanceTimeout: 10000 }));
    const assigned = [[], []];
    members.forEach((c, i) => c.on(c.events.GROUP_JOIN, (e) => {
      assigned[i] = (e.payload.memberAssignment[topic] || []).slice().sort();
    }));
    try {
      for (const c of members) {
        await c.connect();
        await c.subscribe({ topic, fromBeginning: true });
        await c.run({ eachMessage: async () => {} });
      }
      await waitFor(() => assigned[0].length + assigned[1].length === 4
                    && assigned[0].length === 2, 20000, "both members assigned");
      const description = await withAdmin((admin) => admin.describeGroups([groupId]));
      return { assigned, state: description.groups[0].state,
               members: description.groups[0].members.length };
    } finally {
      for (const c of members) await c.disconnect();
    }
  },

  // Transactions: commit, abort, commit; a read_committed consumer (kafkajs'
  // default) sees only committed records, a read_uncommitted one sees all; then
  // offsets sent in an aborted and in a committed transaction.
  async transactions() {
    const topic = `${prefix}-txn`;
    const groupId = `${prefix}-txn-group`;
    await withAdmin((admin) => admin.createTopics({ waitForLeaders: true, topics: [{ topic }] }));
    const producer = kafka.producer({ transactionalId: `${prefix}-tx`, idempotent: true,
                                      maxInFlightRequests: 1 });
    await producer.connect();
    const inTransaction = async (values, end, offsets) => {
      const txn = await producer.transaction();
      if (values.length) await txn.send({ topic, messages: values.map((value) => ({ value })) });
      if (offsets !== undefined) {
        await txn.sendOffsets({ consumerGroupId: groupId,
                                topics: [{ topic, partitions: [{ partition: 0, offset: String(offsets) }] }] });
      }
      await (end === "commit" ? txn.commit() : txn.abort());
    };
    const committedOffset = async () => withAdmin(async (admin) => {
      const r = await admin.fetchOffsets({ groupId, topics: [topic] });
      return Number(r[0].partitions[0].offset);
    });
    try {
      await inTransaction(["c0", "c1", "c2", "c3", "c4"], "commit");
      await inTransaction(["a0", "a1", "a2"], "abort");
      await inTransaction(["c5", "c6", "c7", "c8", "c9"], "commit");
      await inTransaction([], "abort", 5);
      const afterAbort = await committedOffset();
      await inTransaction([], "commit", 5);
      const afterCommit = await committedOffset();
      const committed = await consume(topic, `${prefix}-txn-rc`, 10);
      const uncommitted = await consume(topic, `${prefix}-txn-ru`, 13, { readUncommitted: true });
      const ends = await withAdmin((admin) => admin.fetchTopicOffsets(topic));
      return { committed: committed.map((m) => [m.offset, m.value]),
               uncommitted: uncommitted.map((m) => m.value),
               afterAbort, afterCommit, high: Number(ends[0].high) };
    } finally {
      await producer.disconnect();
    }
  },
};

async function main() {
  const run = SCENARIOS[scenario];
  if (!run) {
    process.stderr.write(`unknown scenario ${scenario}; one of ${Object.keys(SCENARIOS)}\n`);
    process.exit(2);
  }
  report(await run());
}

main().catch((e) => {
  process.stderr.write(`${e.name}: ${e.message}\n${e.stack}\n`);
  process.exit(1);
});
