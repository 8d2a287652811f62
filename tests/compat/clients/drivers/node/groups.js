// Group members, group descriptions and transactional producers of the kafkajs driver.
'use strict'

const { AssignerProtocol, PartitionAssigners } = require('kafkajs')

const members = new Map()
const producers = new Map()

function record (partition, message) {
  const headers = []
  for (const [k, v] of Object.entries(message.headers || {})) {
    for (const one of Array.isArray(v) ? v : [v]) headers.push([k, one === null || one === undefined ? null : Buffer.from(one).toString('base64')])
  }
  const b64 = (buf) => (buf === null || buf === undefined ? null : Buffer.from(buf).toString('base64'))
  return {
    partition,
    offset: parseInt(message.offset, 10),
    timestamp: parseInt(message.timestamp, 10),
    key: b64(message.key),
    value: b64(message.value),
    headers
  }
}

// A consumer in a group; kafkajs fetches in the background once run() is called.
async function memberOpen (kafka, req) {
  if (req.assignor && req.assignor !== 'roundrobin') throw new Error(`kafkajs has no ${req.assignor} assignor`)
  const consumer = kafka.consumer({
    groupId: req.group,
    sessionTimeout: req.session_timeout_ms,
    heartbeatInterval: req.heartbeat_interval_ms,
    partitionAssigners: [PartitionAssigners.roundRobin],
    readUncommitted: req.isolation !== 'read_committed',
    maxWaitTimeInMs: 200,
    metadataMaxAge: 2000,
    allowAutoTopicCreation: false
  })
  const member = { consumer, topic: req.topic, buffer: [], assignment: [], next: {}, error: null }
  consumer.on(consumer.events.GROUP_JOIN, (event) => {
    member.assignment = (event.payload.memberAssignment[req.topic] || []).slice().sort((a, b) => a - b)
  })
  consumer.on(consumer.events.CRASH, (event) => { member.error = event.payload.error })
  await consumer.connect()
  await consumer.subscribe({ topics: [req.topic], fromBeginning: req.reset !== 'latest' })
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      member.buffer.push(record(partition, message))
      member.next[partition] = parseInt(message.offset, 10) + 1
    }
  })
  members.set(req.id, member)
  return {}
}

function lookup (id) {
  const member = members.get(id)
  if (!member) throw new Error(`no member ${id}`)
  return member
}

async function memberTake (req) {
  const member = lookup(req.id)
  const answer = { records: member.buffer, assignment: member.assignment }
  member.buffer = []
  if (member.error) {
    answer.error = { kind: 'other', message: String(member.error) }
    member.error = null
  }
  return answer
}

async function memberCommit (req) {
  const member = lookup(req.id)
  const offsets = req.offsets || member.next // null: what was consumed
  await member.consumer.commitOffsets(Object.entries(offsets).map(([p, o]) => ({
    topic: member.topic, partition: parseInt(p, 10), offset: String(o)
  })))
  return {}
}

async function memberClose (req) {
  const member = lookup(req.id)
  members.delete(req.id)
  await member.consumer.disconnect() // LeaveGroup
  return {}
}

async function describeGroup (kafka, req) {
  const admin = kafka.admin()
  await admin.connect()
  try {
    const { groups } = await admin.describeGroups([req.group])
    const group = groups[0]
    const described = group.members.map((m) => {
      let partitions = []
      if (m.memberAssignment && m.memberAssignment.length) {
        const decoded = AssignerProtocol.MemberAssignment.decode(m.memberAssignment)
        partitions = (decoded && decoded.assignment[req.topic]) || []
      }
      return { member_id: m.memberId, instance_id: null, partitions }
    })
    const committed = {}
    for (const t of await admin.fetchOffsets({ groupId: req.group, topics: [req.topic] })) {
      for (const p of t.partitions) committed[p.partition] = parseInt(p.offset, 10)
    }
    const ends = {}
    for (const p of await admin.fetchTopicOffsets(req.topic)) ends[p.partition] = parseInt(p.high, 10)
    return { state: group.state, members: described, committed, end_offsets: ends }
  } finally {
    await admin.disconnect()
  }
}

async function txnOpen (kafka, req) {
  const producer = kafka.producer({
    transactionalId: req.transactional_id,
    transactionTimeout: req.timeout_ms,
    idempotent: true,
    maxInFlightRequests: 1
  })
  await producer.connect() // an idempotent InitProducerId, without the transactional id
  // kafkajs asks for the transactional producer id only when its first transaction begins; begin one and end it
  // at once (no partitions: no EndTxn) so that opening fences an older producer, as initTransactions does.
  await (await producer.transaction()).abort()
  producers.set(req.id, { producer, transaction: null })
  return {}
}

function messagesOf (records, unb64) {
  return records.map((r) => {
    const message = { key: unb64(r.key), value: unb64(r.value) }
    if (r.partition !== null) message.partition = r.partition
    return message
  })
}

async function txnOp (req, unb64) {
  const entry = producers.get(req.id)
  if (!entry) throw new Error(`no producer ${req.id}`)
  switch (req.op) {
    case 'txn_begin':
      entry.transaction = await entry.producer.transaction()
      return {}
    case 'txn_send':
      await entry.transaction.send({ topic: req.topic, messages: messagesOf(req.records, unb64), acks: -1 })
      return {}
    case 'txn_offsets':
      await entry.transaction.sendOffsets({
        consumerGroupId: req.group,
        topics: [{
          topic: req.topic,
          partitions: Object.entries(req.offsets).map(([p, o]) => ({ partition: parseInt(p, 10), offset: String(o) }))
        }]
      })
      return {}
    case 'txn_commit':
      await entry.transaction.commit()
      return {}
    case 'txn_abort':
      await entry.transaction.abort()
      return {}
    case 'txn_close':
      producers.delete(req.id)
      await entry.producer.disconnect()
      return {}
  }
  throw new Error(`unknown op ${req.op}`)
}

module.exports = { memberOpen, memberTake, memberCommit, memberClose, describeGroup, txnOpen, txnOp, messagesOf }
