// SPDX-License-Identifier: GPL-3.0-or-later
// ImageForge frames: a Flamenco job type for ImageForge's frame jobs (remove-background, upscale-image).
// Copy this file into the `scripts/` folder next to `flamenco-manager` (`imageforge farm flamenco-job-type DIR`
// writes it there) and restart the Manager. Three kinds of task, each running the `imageforge` command:
//   1. set up: this worker's server environment, the job's model (verified) and the input, by making its first
//      frame: a farm that cannot run the job fails here, before any chunk;
//   2. one task per chunk of frames: `imageforge run JOB … --into FRAMES_FOLDER --frames A-B` (a worker that has
//      not set up sets itself up in its first chunk);
//   3. assemble, after every chunk: `imageforge farm assemble` (the video a single run makes, or the check that
//      every frame of the sequence is there).
// Written for Flamenco's job compiler (goja: ES5 with const/let and arrow functions); docs/farm.md.

const FRAME_JOBS = ["remove-background", "upscale-image"];

const JOB_TYPE = {
  label: "ImageForge frames",
  description: "Remove the background of, or upscale, every frame of a video or image sequence with ImageForge.",
  settings: [
    { key: "imageforge_job", type: "string", choices: FRAME_JOBS, default: "remove-background", required: true,
      label: "Job", description: "The ImageForge frame job." },
    { key: "input", type: "string", subtype: "file_path", required: true,
      label: "Input", description: "The video, frame folder or pattern (shot_####.png)." },
    { key: "frames", type: "string", required: true, default: "1-250",
      label: "Frames", description: "Frame numbers, e.g. 1-250 (a video's frames are numbered from 1)." },
    { key: "chunk_size", type: "int32", default: 10, required: true,
      label: "Chunk Size", description: "Frames per task." },
    { key: "frames_folder", type: "string", subtype: "dir_path", required: true,
      label: "Frames Folder", description: "Shared folder the chunks write frames into." },
    { key: "output_folder", type: "string", subtype: "dir_path", required: false,
      label: "Output Folder", description: "Where the assembled video goes (not used for PNG sequences)." },
    { key: "model", type: "string", required: false, default: "",
      label: "Model", description: "Catalog key of the model; empty: the family's default." },
    { key: "parameters", type: "string", required: false, default: "{}",
      label: "Parameters", description: "Other job parameters as JSON, e.g. {\"scale\": 2}." },
    { key: "imageforge", type: "string", required: true, default: "imageforge",
      label: "ImageForge Command", description: "The imageforge command on the workers." },
  ],
};

function compileJob(job) {
  const settings = job.settings;
  if (FRAME_JOBS.indexOf(settings.imageforge_job) < 0) {
    throw "ImageForge frames runs " + FRAME_JOBS.join(" or ") + ", not '" + settings.imageforge_job + "'.";
  }
  if (!(settings.chunk_size >= 1)) {
    throw "The chunk size must be at least 1 frame.";
  }
  const words = parameterWords(settings);
  const video = words.indexOf("sequence_output=png_sequence") < 0;
  if (video && !settings.output_folder) {
    throw "Give an Output Folder for the assembled video (or sequence_output png_sequence in Parameters).";
  }
  const source = "input=" + settings.input;
  const exe = settings.imageforge;

  const setup = author.Task("ImageForge set up", "misc");
  setup.addCommand(imageforge(exe, ["farm", "setup-worker", settings.imageforge_job, source].concat(words)));
  job.addTask(setup);

  const chunks = [];
  for (const chunk of frameChunker(settings.frames, settings.chunk_size)) {
    const task = author.Task("Frames " + chunk, "misc");
    task.addCommand(imageforge(exe, ["run", settings.imageforge_job, source].concat(words,
      ["--into", settings.frames_folder, "--frames", chunk])));
    task.addDependency(setup);
    job.addTask(task);
    chunks.push(task);
  }

  let assemble = ["farm", "assemble", settings.imageforge_job, source].concat(words,
    ["--into", settings.frames_folder, "--frames", settings.frames]);
  if (video) {
    assemble = assemble.concat(["--output", settings.output_folder]);
  }
  const last = author.Task("ImageForge assemble", "misc");
  last.addCommand(imageforge(exe, assemble));
  for (const task of chunks) {
    last.addDependency(task);
  }
  job.addTask(last);
}

// The job's own parameters as the `key=value` words every imageforge command takes (values as JSON).
function parameterWords(settings) {
  let parsed;
  try {
    parsed = JSON.parse(settings.parameters || "{}");
  } catch (error) {
    throw "Parameters must be a JSON object such as {\"scale\": 2}: " + error;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw "Parameters must be a JSON object such as {\"scale\": 2}.";
  }
  const words = [];
  for (const key of Object.keys(parsed)) {
    if (key === "input" || key === "first_frame" || key === "frame_count") {
      throw "Give '" + key + "' with the Input and Frames settings, not in Parameters.";
    }
    const value = parsed[key];
    words.push(key + "=" + (typeof value === "string" && !looksLikeJson(value) ? value : JSON.stringify(value)));
  }
  if (settings.model) {
    words.push("model=" + settings.model);
  }
  return words;
}

function looksLikeJson(text) {
  try {
    JSON.parse(text);
    return true;
  } catch (error) {
    return false;
  }
}

function imageforge(exe, args) {
  return author.Command("exec", { exe: exe, args: args });
}
