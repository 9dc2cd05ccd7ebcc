// A STAND-IN for Flamenco's job compiler, for tests only: Flamenco itself cannot be installed here.
// It offers the part of the documented job-compiler API that a job type script uses (Flamenco 3.x,
// internal/manager/job_compilers: `author.Task(name, type)`, `task.addCommand`, `task.addDependency`,
// `author.Command(type, parameters)`, `job.settings`, `job.addTask`, `frameChunker(frames, chunkSize)`, `print`),
// evaluates the job type script in a fresh context as the Manager does, calls its `compileJob(job)`, and prints
// the tasks it made, with their commands and dependencies, as JSON. What it does not do: schedule, talk to
// workers, evaluate settings' `eval` (Blender-side), or check settings against JOB_TYPE like the Manager's form.
//
// node flamenco_standin.js JOB_TYPE_SCRIPT SETTINGS_JSON  →  {"job_type": {...}, "tasks": [...]} or {"error": "..."}
"use strict";
const fs = require("fs");
const vm = require("vm");

function expandFrames(frames) {
  const numbers = [];
  for (const part of String(frames).split(",")) {
    const match = /^\s*(-?\d+)\s*(?:-\s*(-?\d+)\s*)?$/.exec(part);
    if (!match) throw "invalid frame range '" + frames + "'";
    const first = parseInt(match[1], 10);
    const last = match[2] === undefined ? first : parseInt(match[2], 10);
    for (let number = first; number <= last; number++) numbers.push(number);
  }
  return numbers;
}

// Chunks of `chunkSize` frames, each written "first-last" (or "n" for one frame), as Flamenco's frameChunker.
function frameChunker(frames, chunkSize) {
  const numbers = expandFrames(frames);
  const chunks = [];
  for (let start = 0; start < numbers.length; start += chunkSize) {
    const chunk = numbers.slice(start, start + chunkSize);
    const first = chunk[0];
    const last = chunk[chunk.length - 1];
    chunks.push(first === last ? String(first) : first + "-" + last);
  }
  return chunks;
}

class Task {
  constructor(name, type) {
    this.name = name;
    this.type = type;
    this.commands = [];
    this.dependencies = [];
  }
  addCommand(command) {
    this.commands.push(command);
  }
  addDependency(task) {
    this.dependencies.push(task.name);
  }
}

const [scriptPath, settingsJson] = process.argv.slice(2);
const tasks = [];
const job = { settings: JSON.parse(settingsJson), created: new Date(0), addTask: (task) => tasks.push(task) };
const printed = [];
const context = vm.createContext({
  author: { Task: (name, type) => new Task(name, type), Command: (type, parameters) => ({ type, parameters }) },
  frameChunker,
  print: (...values) => printed.push(values.join(" ")),
  JSON,
});
vm.runInContext(fs.readFileSync(scriptPath, "utf8") + "\n;globalThis.JOB_TYPE = JOB_TYPE;", context, { filename: scriptPath });
try {
  context.compileJob(job);
  process.stdout.write(JSON.stringify({ job_type: context.JOB_TYPE, tasks, printed }));
} catch (error) {
  process.stdout.write(JSON.stringify({ error: String(error) }));
}
