#!/usr/bin/env node
// Validate SGF files with @sabaki/sgf and print one JSON summary line per file.
// Usage: node check_sgf.js FILE...
// Exit 0 if every file is valid, 1 otherwise (reasons on stderr), 2 on usage error.
'use strict'

const fs = require('fs')
const sgf = require('@sabaki/sgf')

const ROOT_PROPS = ['SZ', 'KM', 'RU', 'RE', 'PB', 'PW', 'FF', 'GM', 'CA']
const COORD = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'

function first(node, prop) {
  const v = node.data[prop]
  return v && v.length > 0 ? v[0] : undefined
}

// SZ is "N" or "W:H" (FF[4]); returns [width, height] or null.
function boardSize(sz) {
  const m = /^\s*(\d+)(?:\s*:\s*(\d+))?\s*$/.exec(sz)
  if (!m) return null
  const w = Number(m[1])
  const h = m[2] === undefined ? w : Number(m[2])
  if (w < 1 || h < 1 || w > 52 || h > 52) return null
  return [w, h]
}

// Empty value is a pass; otherwise exactly two letters inside the board.
function moveOk(value, [w, h]) {
  if (value === '') return true
  if (value.length !== 2) return false
  const x = COORD.indexOf(value[0])
  const y = COORD.indexOf(value[1])
  return x >= 0 && x < w && y >= 0 && y < h
}

// @sabaki/sgf silently accepts unbalanced parentheses and text before the
// first '(' (it becomes an extra empty root); check with its own tokenizer.
function structureProblems(buffer) {
  const problems = []
  let depth = 0
  let opened = false
  for (const t of sgf.tokenizeBufferIter(buffer)) {
    const at = `${t.row + 1}:${t.col + 1}`
    if (t.type !== 'parenthesis') {
      if (!opened) {
        problems.push(`content before first '(' at ${at}`)
        opened = true // report once
      }
      continue
    }
    opened = true
    depth += t.value === '(' ? 1 : -1
    if (depth < 0) {
      problems.push(`unexpected ')' at ${at}`)
      depth = 0
    }
  }
  if (depth > 0) problems.push(`${depth} unclosed '(' at end of file`)
  return problems
}

function checkFile(file) {
  const errors = []
  let games
  try {
    const buffer = fs.readFileSync(file)
    // jschardet finds no encoding for an empty buffer and iconv then throws.
    if (buffer.length === 0) return {errors: ['empty file, no game tree']}
    games = sgf.parseBuffer(buffer)
    errors.push(...structureProblems(buffer))
  } catch (e) {
    return {errors: [`parse failed: ${e.message}`]}
  }
  if (!Array.isArray(games) || games.length === 0) {
    return {errors: ['no game tree']}
  }

  games.forEach((game, gi) => {
    const where = games.length > 1 ? `game ${gi + 1}: ` : ''
    if (first(game, 'FF') !== '4') errors.push(`${where}root lacks FF[4]`)
    if (first(game, 'GM') !== '1') errors.push(`${where}root lacks GM[1]`)
    const sz = first(game, 'SZ')
    const size = sz === undefined ? null : boardSize(sz)
    if (sz === undefined) errors.push(`${where}root lacks SZ`)
    else if (!size) errors.push(`${where}bad SZ[${sz}]`)
    if (!size) return
    // Check every B/W move in every variation (iteratively; trees can be deep).
    const stack = [[game, 0]]
    while (stack.length) {
      const [node, depth] = stack.pop()
      if ('B' in node.data && 'W' in node.data) {
        errors.push(`${where}node ${depth}: both B and W in one node`)
      }
      for (const c of ['B', 'W']) {
        const values = node.data[c] || []
        if (values.length > 1) {
          errors.push(`${where}node ${depth}: ${c} has ${values.length} values`)
        }
        for (const v of values) {
          if (!moveOk(v, size)) {
            errors.push(`${where}node ${depth}: bad move ${c}[${v}] on SZ[${sz}]`)
          }
        }
      }
      for (const child of node.children) stack.push([child, depth + 1])
    }
  })

  const root = games[0]
  const rootProps = {}
  for (const p of ROOT_PROPS) {
    const v = first(root, p)
    if (v !== undefined) rootProps[p] = v
  }
  let moves = 0
  let comments = 0
  const firstMoves = []
  for (let node = root; node; node = node.children[0]) {
    const c = 'B' in node.data ? 'B' : 'W' in node.data ? 'W' : null
    if (c) {
      moves++
      if (firstMoves.length < 5) firstMoves.push(`${c}:${first(node, c)}`)
    }
    if ('C' in node.data) comments++
  }
  return {
    errors,
    summary: {
      file,
      games: games.length,
      root: rootProps,
      moves,
      comments,
      first_moves: firstMoves
    }
  }
}

function main(argv) {
  if (argv.length === 0) {
    process.stderr.write('usage: node check_sgf.js FILE...\n')
    return 2
  }
  let failed = 0
  for (const file of argv) {
    const {errors, summary} = checkFile(file)
    if (summary) process.stdout.write(JSON.stringify(summary) + '\n')
    for (const e of errors) process.stderr.write(`${file}: ${e}\n`)
    if (errors.length) failed++
  }
  if (failed) {
    process.stderr.write(`check_sgf: ${failed} of ${argv.length} file(s) invalid\n`)
    return 1
  }
  return 0
}

process.exitCode = main(process.argv.slice(2))
