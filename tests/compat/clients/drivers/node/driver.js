#!/usr/bin/env node
// The kafkajs driver of the kbroker compatibility suite.
//
// `node driver.js serve` answers JSON-line commands on stdin; `node driver.js <op> [json]` runs one command
// (arguments from argv or stdin) and exits 1 on error. Commands are documented in docs/compatibility.md.
'use strict'

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const fs = require('fs')
const readline = require('readline')
const { Kafka, CompressionTypes, ConfigResourceTypes, logLevel } = require('kafkajs')
const groups = require('./groups')

const CODECS = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP }
const ACKS = { all: -1, '-1': -1, 1: 1, 0: 0 }

const b64 = (buf) => (buf === null || buf === undefined ? null : Buffer.from(buf).toString('base64'))
const unb64 = (text) => (text === null || text === undefined ? null : Buffer.from(text, 'base64'))
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

function kafka (req) {
  return new Kafka({
    clientId: 'compat-kafkajs',
    brokers: [req.bootstrap],
    logLevel: logLevel.NOTHING,
    retry: { retries: 6, initialRetryTime: 100, maxRetryTime: 1000 },
    ...security(req.security)
  })
}

// A command's optional "security" object as kafkajs options: protocol, mechanism, username, password,
// and PEM files (ca; cert and key for mutual TLS).
function security (s) {
  if (!s || !s.protocol || s.protocol === 'PLAINTEXT') return {}
  const options = {}
  if (s.protocol.includes('SSL')) {
    options.ssl = { ca: [fs.readFileSync(s.ca, 'utf8')], servername: 'localhost' }
    if (s.cert) {
      options.ssl.cert = fs.readFileSync(s.cert, 'utf8')
      options.ssl.key = fs.readFileSync(s.key, 'utf8')
    }
  }
  if (s.protocol.startsWith('SASL')) {
    options.sasl = { mechanism: s.mechanism.toLowerCase(), username: s.username, password: s.password }
  }
  return options
}

async function withAdmin (req, action) {
  const admin = kafka(req).admin()
  await admin.connect()
  try {
    return await action(admin)
  } finally {
    await admin.disconnect()
  }
}

// An idempotent run, one record at a time (kafkajs's idempotent producer allows one request in flight),
// sleeping pace_ms after each; retries long enough to outlast a broker restart.
async function produceIdempotent (req) {
  const client = new Kafka({
    clientId: 'compat-kafkajs',
    brokers: [req.bootstrap],
    logLevel: logLevel.NOTHING,
    retry: { retries: 40, initialRetryTime: 100, maxRetryTime: 1000 }
  })
  const producer = client.producer({ allowAutoTopicCreation: true, idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  try {
    const offsets = []
    for (const message of groups.messagesOf(req.records, unb64)) {
      const [sent] = await producer.send({ topic: req.topic, messages: [message], acks: -1 })
      offsets.push([sent.partition, parseInt(sent.baseOffset, 10)])
      if (req.pace_ms) await sleep(req.pace_ms)
    }
    return { offsets }
  } finally {
    await producer.disconnect()
  }
}

async function produce (req) {
  if (req.idempotent) return produceIdempotent(req)
  if (!(req.compression in CODECS)) throw new Error(`kafkajs has no built-in codec ${req.compression}`)
  const producer = kafka(req).producer({ allowAutoTopicCreation: true, idempotent: false })
  await producer.connect()
  try {
    const messages = req.records.map((r) => {
      const message = { key: unb64(r.key), value: unb64(r.value), headers: {} }
      for (const [k, v] of r.headers) message.headers[k] = unb64(v)
      if (r.timestamp !== null) message.timestamp = String(r.timestamp)
      if (r.partition !== null) message.partition = r.partition
      return message
    })
    const sent = await producer.send({
      topic: req.topic,
      messages,
      acks: ACKS[req.acks],
      compression: CODECS[req.compression]
    })
    // kafkajs reports one base offset per partition, not the partition each record went to.
    const offsets = messages.map(() => [-1, -1])
    if (sent.length === 1 && req.acks !== '0') {
      const base = parseInt(sent[0].baseOffset, 10)
      messages.forEach((_, i) => { offsets[i] = [sent[0].partition, base + i] })
    }
    return { offsets }
  } finally {
    await producer.disconnect()
  }
}

function headersOf (message) {
  const out = []
  for (const [k, v] of Object.entries(message.headers || {})) {
    for (const one of Array.isArray(v) ? v : [v]) out.push([k, b64(one)])
  }
  return out
}

async function consume (req) {
  const explicit = typeof req.start === 'object'
  const consumer = kafka(req).consumer({
    groupId: `compat-kafkajs-${process.pid}-${Date.now()}-${Math.random()}`,
    maxWaitTimeInMs: 200,
    allowAutoTopicCreation: false,
    readUncommitted: req.isolation !== 'read_committed'
  })
  const records = []
  const wanted = new Set(req.partitions)
  let done
  const finished = new Promise((resolve) => { done = resolve })
  let failure = null
  await consumer.connect()
  try {
    const fromBeginning = req.start === 'earliest' || (explicit && req.reset === 'earliest')
    await consumer.subscribe({ topics: [req.topic], fromBeginning })
    consumer.on(consumer.events.CRASH, (event) => { failure = event.payload.error; done() })
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        if (!wanted.has(partition) || records.length >= req.max_records) return
        records.push({
          partition,
          offset: parseInt(message.offset, 10),
          timestamp: parseInt(message.timestamp, 10),
          key: b64(message.key),
          value: b64(message.value),
          headers: headersOf(message)
        })
        if (records.length >= req.max_records) done()
      }
    })
    if (explicit) {
      for (const [p, o] of Object.entries(req.start)) {
        consumer.seek({ topic: req.topic, partition: parseInt(p, 10), offset: String(o) })
      }
    }
    await Promise.race([finished, sleep(req.timeout_ms)])
  } finally {
    await consumer.disconnect()
  }
  if (failure) throw failure
  return { records: records.slice(0, req.max_records), positions: null }
}

const ADMIN = {
  create_topic: (req) => withAdmin(req, async (admin) => {
    const configEntries = Object.entries(req.configs).map(([name, value]) => ({ name, value }))
    const created = await admin.createTopics({
      topics: [{ topic: req.topic, numPartitions: req.partitions, replicationFactor: 1, configEntries }],
      waitForLeaders: true
    })
    if (!created) throw Object.assign(new Error(`topic ${req.topic} already exists`), { type: 'TOPIC_ALREADY_EXISTS' })
    return {}
  }),
  describe_topic: (req) => withAdmin(req, async (admin) => {
    const { topics } = await admin.fetchTopicMetadata({ topics: [req.topic] })
    return { partitions: topics[0].partitions.map((p) => p.partitionId) }
  }),
  topic_configs: (req) => withAdmin(req, async (admin) => {
    const described = await admin.describeConfigs({
      resources: [{ type: ConfigResourceTypes.TOPIC, name: req.topic }],
      includeSynonyms: false
    })
    const configs = {}
    for (const entry of described.resources[0].configEntries) configs[entry.configName] = entry.configValue
    return { configs }
  }),
  alter_config: (req) => withAdmin(req, async (admin) => {
    await admin.alterConfigs({
      validateOnly: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: req.topic, configEntries: [{ name: req.key, value: req.value }] }]
    })
    return {}
  }),
  create_partitions: (req) => withAdmin(req, async (admin) => {
    await admin.createPartitions({ topicPartitions: [{ topic: req.topic, count: req.total }] })
    return {}
  }),
  delete_topic: (req) => withAdmin(req, async (admin) => {
    await admin.deleteTopics({ topics: [req.topic] })
    return {}
  }),
  list_offset: (req) => withAdmin(req, async (admin) => {
    let found
    if (req.spec === 'earliest' || req.spec === 'latest') {
      const offsets = await admin.fetchTopicOffsets(req.topic)
      const p = offsets.find((o) => o.partition === req.partition)
      found = req.spec === 'earliest' ? p.low : p.high
    } else {
      const offsets = await admin.fetchTopicOffsetsByTimestamp(req.topic, req.spec)
      found = offsets.find((o) => o.partition === req.partition).offset
    }
    return { offset: parseInt(found, 10) }
  }),
  delete_records: (req) => withAdmin(req, async (admin) => {
    // deleteTopicRecords needs the topic's metadata loaded first, or it fails with "Topic metadata not loaded".
    await admin.fetchTopicMetadata({ topics: [req.topic] })
    await admin.deleteTopicRecords({ topic: req.topic, partitions: [{ partition: req.partition, offset: String(req.before) }] })
    // kafkajs does not return the new low watermark; ask for it.
    const offsets = await admin.fetchTopicOffsets(req.topic)
    return { low_watermark: parseInt(offsets.find((o) => o.partition === req.partition).low, 10) }
  })
}

function kind (error) {
  let cause = error
  while (cause && !cause.type && cause.cause) cause = cause.cause // unwrap KafkaJSNumberOfRetriesExceeded
  const type = cause && cause.type
  if (type === 'MESSAGE_TOO_LARGE' || type === 'RECORD_LIST_TOO_LARGE') return 'message_too_large'
  if (type === 'OFFSET_OUT_OF_RANGE') return 'offset_out_of_range'
  if (type === 'TOPIC_ALREADY_EXISTS') return 'topic_exists'
  if (type === 'UNKNOWN_TOPIC_OR_PARTITION') return 'unknown_topic'
  if (type === 'PRODUCER_FENCED' || type === 'INVALID_PRODUCER_EPOCH') return 'fenced'
  if (error && error.name === 'KafkaJSServerDoesNotSupportApiKey') return 'unsupported'
  for (let e = error; e; e = e.cause || e.originalError) {
    if (e.name === 'KafkaJSSASLAuthenticationError' || /alert|certificate/i.test(e.code || '')) return 'authentication'
  }
  return 'other'
}

async function handle (req) {
  try {
    let answer
    if (req.op === 'produce') answer = await produce(req)
    else if (req.op === 'consume') answer = await consume(req)
    else if (req.op in ADMIN) answer = await ADMIN[req.op](req)
    else if (req.op === 'member_open') answer = await groups.memberOpen(kafka(req), req)
    else if (req.op === 'member_take') answer = await groups.memberTake(req)
    else if (req.op === 'member_commit') answer = await groups.memberCommit(req)
    else if (req.op === 'member_close') answer = await groups.memberClose(req)
    else if (req.op === 'describe_group') answer = await groups.describeGroup(kafka(req), req)
    else if (req.op === 'txn_open') answer = await groups.txnOpen(kafka(req), req)
    else if (req.op.startsWith('txn_')) answer = await groups.txnOp(req, unb64)
    else throw new Error(`unknown op ${req.op}`)
    return { ...answer, ok: true }
  } catch (error) {
    return { ok: false, error: { kind: kind(error), message: `${error.name}: ${error.message}` } }
  }
}

async function serve () {
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity })
  for await (const line of lines) {
    if (!line.trim()) continue
    let answer
    try {
      answer = await handle(JSON.parse(line))
    } catch (error) {
      answer = { ok: false, error: { kind: 'other', message: String(error) } }
    }
    process.stdout.write(JSON.stringify(answer) + '\n')
  }
}

async function main () {
  const [op, body] = process.argv.slice(2)
  if (!op) {
    process.stderr.write('usage: driver.js serve | driver.js <op> [json-arguments]\n')
    process.exit(2)
  }
  if (op === 'serve') {
    await serve()
    process.exit(0)
  }
  let text = body
  if (text === undefined) {
    const chunks = []
    for await (const chunk of process.stdin) chunks.push(chunk)
    text = Buffer.concat(chunks).toString()
  }
  const answer = await handle({ ...(text.trim() ? JSON.parse(text) : {}), op })
  process.stdout.write(JSON.stringify(answer) + '\n')
  process.exit(answer.ok ? 0 : 1)
}

main()
