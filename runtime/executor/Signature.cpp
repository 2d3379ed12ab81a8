//===- Signature.cpp - The compiled model's signature
//----------------------===//
//
// weft_model_signature (KernelABI.h) parsed into a ModelSignature and
// checked: tensor lists, training roles, the mesh, splits and pipeline
// stages.
//
//===----------------------------------------------------------------------===//
#include "weft/runtime/Executor.h"
#include "weft/runtime/MeshIndex.h"

#include "weft/runtime/Json.h"

#include <algorithm>
#include <string>
#include <unordered_set>

namespace weft {

//===----------------------------------------------------------------------===//
// Signature
//===----------------------------------------------------------------------===//

const char *stateRoleName(StateRole role) {
  switch (role) {
  case StateRole::Param:
    return "param";
  case StateRole::OptimizerState:
    return "optimizer_state";
  case StateRole::Step:
    return "step";
  case StateRole::None:
    break;
  }
  return "";
}

/// The training fields of one entry: "role" and "trainable" (params),
/// "batch_dim" (inputs).
static bool parseTrainingFields(const JsonValue &item, const char *key,
                                TensorSpec &spec, const std::string &where,
                                std::string &error) {
  if (const JsonValue *role = item.get("role")) {
    const std::string &name = role->asString();
    if (name == "param")
      spec.role = StateRole::Param;
    else if (name == "optimizer_state")
      spec.role = StateRole::OptimizerState;
    else if (name == "step")
      spec.role = StateRole::Step;
    else {
      error = where + ": \"role\" must be \"param\", \"optimizer_state\" "
                      "or \"step\"";
      return false;
    }
    if (std::string(key) != "params") {
      error = where + ": only params entries have a \"role\"";
      return false;
    }
  }
  if (const JsonValue *trainable = item.get("trainable")) {
    if (!trainable->isBool()) {
      error = where + ": \"trainable\" is not a boolean";
      return false;
    }
    spec.trainable = trainable->asBool();
  }
  if (const JsonValue *batchDim = item.get("batch_dim")) {
    if (!batchDim->isInteger() || batchDim->asInt() < 0 ||
        batchDim->asInt() >= static_cast<int64_t>(spec.shape.size())) {
      error = where + ": \"batch_dim\" is not a dimension of shape " +
              formatShape(spec.shape);
      return false;
    }
    spec.batchDim = batchDim->asInt();
  }
  if (const JsonValue *stage = item.get("stage")) {
    if (!stage->isInteger() || stage->asInt() < 0) {
      error = where + ": invalid \"stage\"";
      return false;
    }
    spec.stage = stage->asInt();
  }
  if (const JsonValue *shard = item.get("shard")) {
    const JsonValue *dim = shard->get("dim");
    const JsonValue *axes = shard->get("mesh_axes");
    const JsonValue *outer = shard->get("outer");
    if (!dim || !dim->isInteger() || dim->asInt() < 0 ||
        dim->asInt() >= static_cast<int64_t>(spec.shape.size()) || !axes ||
        !axes->isArray() ||
        (outer && (!outer->isInteger() || outer->asInt() < 1))) {
      error = where + ": invalid \"shard\"";
      return false;
    }
    spec.shardDim = dim->asInt();
    for (size_t i = 0; i < axes->size(); ++i)
      spec.shardAxes.push_back(axes->at(i).asInt());
    if (outer)
      spec.shardOuter = outer->asInt();
  }
  if (const JsonValue *shard = item.get("sequence_shard")) {
    const JsonValue *dim = shard->get("dim");
    const JsonValue *axes = shard->get("mesh_axes");
    if (!dim || !dim->isInteger() || dim->asInt() != 1 || spec.shardDim != 0 ||
        spec.shape.size() < 2 || !axes || !axes->isArray()) {
      error = where + ": invalid \"sequence_shard\" (dim 1 of an input whose "
                      "\"shard\" splits dim 0)";
      return false;
    }
    spec.sequenceDim = 1;
    for (size_t i = 0; i < axes->size(); ++i)
      spec.sequenceAxes.push_back(axes->at(i).asInt());
  }
  return true;
}

/// Ranks over `axes` of `mesh`.
static int64_t groupSizeOf(const std::vector<int64_t> &mesh,
                           const std::vector<int64_t> &axes) {
  int64_t n = 1;
  for (int64_t a : axes)
    n *= a >= 0 && a < static_cast<int64_t>(mesh.size()) ? mesh[a] : 1;
  return n;
}

int64_t ModelSignature::globalBatch() const {
  if (inputs.empty() || inputs[0].shape.empty())
    return 0;
  const TensorSpec &in = inputs[0];
  return in.shape[0] *
         (in.shardDim == 0 ? groupSizeOf(meshShape, in.shardAxes) : 1);
}

static bool parseTensorList(const JsonValue &root, const char *key,
                            std::vector<TensorSpec> &out, std::string &error) {
  const JsonValue *list = root.get(key);
  if (!list || !list->isArray()) {
    error = std::string("\"") + key + "\" is missing or not an array";
    return false;
  }
  std::unordered_set<std::string> names;
  for (size_t i = 0; i < list->size(); ++i) {
    const JsonValue &item = list->at(i);
    std::string where = std::string(key) + "[" + std::to_string(i) + "]";
    if (!item.isObject()) {
      error = where + " is not an object";
      return false;
    }
    const JsonValue *name = item.get("name");
    const JsonValue *dtype = item.get("dtype");
    const JsonValue *shape = item.get("shape");
    if (!name || !name->isString() || name->asString().empty()) {
      error = where + " has no \"name\"";
      return false;
    }
    TensorSpec spec;
    spec.name = name->asString();
    where += " ('" + spec.name + "')";
    if (!names.insert(spec.name).second) {
      error = where + ": the name appears twice";
      return false;
    }
    if (!dtype || !parseDTypeName(dtype->asString(), spec.dtype)) {
      error = where + ": missing or unknown \"dtype\"";
      return false;
    }
    if (!shape || !shape->isArray()) {
      error = where + ": missing or non-array \"shape\"";
      return false;
    }
    for (size_t d = 0; d < shape->size(); ++d) {
      if (!shape->at(d).isInteger() || shape->at(d).asInt() < 0) {
        error = where + ": invalid dimension in \"shape\"";
        return false;
      }
      spec.shape.push_back(shape->at(d).asInt());
    }
    int64_t count = 0, elementSize = weftDTypeSize(spec.dtype);
    if (!shapeNumElements(spec.shape, count, elementSize)) {
      error = where + ": shape " + formatShape(spec.shape) + " is too large";
      return false;
    }
    spec.byteSize = static_cast<uint64_t>(count * elementSize);
    if (!parseTrainingFields(item, key, spec, where, error))
      return false;
    out.push_back(std::move(spec));
  }
  return true;
}

/// What the trainer relies on (ModelABI.h, training signatures).
static bool checkTrainingSignature(const ModelSignature &sig,
                                   std::string &error) {
  for (const TensorSpec &p : sig.params) {
    if (p.role == StateRole::None) {
      error = "params entry '" + p.name + "' of a training model has no role";
      return false;
    }
    if (p.name == "__metadata__") {
      error = "params entry '__metadata__': the name is reserved";
      return false;
    }
  }
  if (sig.inputs.empty()) {
    error = "a training model needs at least one input";
    return false;
  }
  int64_t batch = -1;
  for (const TensorSpec &in : sig.inputs) {
    if (in.batchDim != 0) {
      error = "input '" + in.name + "' of a training model needs batch_dim 0";
      return false;
    }
    if (batch < 0)
      batch = in.shape[0];
    if (in.shape[0] != batch || batch == 0) {
      error = "input '" + in.name + "' has batch dimension " +
              std::to_string(in.shape[0]) + " but the global batch is " +
              std::to_string(batch) + " (every input needs the same, non-zero)";
      return false;
    }
  }
  if (sig.outputs.empty() || !sig.outputs[0].shape.empty() ||
      (sig.outputs[0].dtype != WEFT_F32 && sig.outputs[0].dtype != WEFT_F64 &&
       sig.outputs[0].dtype != WEFT_F16 && sig.outputs[0].dtype != WEFT_BF16)) {
    error = "the first output of a training model must be the loss, a float "
            "scalar";
    return false;
  }
  return true;
}

bool parseModelSignature(std::string_view json, ModelSignature &out,
                         std::string &error) {
  JsonValue root;
  std::string reason;
  if (!parseJson(json, root, reason)) {
    error = "invalid model signature: " + reason;
    return false;
  }
  auto fail = [&](const std::string &what) {
    error = "invalid model signature: " + what;
    return false;
  };
  if (!root.isObject())
    return fail("not a JSON object");
  ModelSignature sig;
  const JsonValue *version = root.get("format_version");
  if (!version || !version->isInteger())
    return fail("missing \"format_version\"");
  sig.formatVersion = version->asInt();
  if (sig.formatVersion != 1)
    return fail("unsupported format_version " +
                std::to_string(sig.formatVersion) + " (this runtime reads 1)");
  const JsonValue *arena = root.get("arena_bytes");
  if (!arena || !arena->isInteger() || arena->asInt() < 0)
    return fail("missing or negative \"arena_bytes\"");
  sig.arenaBytes = static_cast<uint64_t>(arena->asInt());
  if (const JsonValue *align = root.get("arena_alignment")) {
    int64_t a = align->asInt();
    if (!align->isInteger() || a <= 0 || (a & (a - 1)) != 0 ||
        a > (int64_t(1) << 30))
      return fail("\"arena_alignment\" is not a power of two");
    sig.arenaAlignment = static_cast<uint64_t>(a);
  }
  if (const JsonValue *target = root.get("target")) {
    if (!target->isString() ||
        (target->asString() != "cpu" && target->asString() != "cuda"))
      return fail("\"target\" must be \"cpu\" or \"cuda\"");
    sig.target = target->asString();
  }
  if (const JsonValue *mode = root.get("mode")) {
    if (mode->asString() == "train")
      sig.mode = ModelMode::Train;
    else if (mode->asString() != "inference")
      return fail("\"mode\" must be \"inference\" or \"train\"");
  }
  if (const JsonValue *model = root.get("model_sha256")) {
    if (!model->isString())
      return fail("\"model_sha256\" is not a string");
    sig.modelSha256 = model->asString();
  }
  if (const JsonValue *world = root.get("world_size")) {
    if (!world->isInteger() || world->asInt() < 1)
      return fail("\"world_size\" is not a positive integer");
    sig.worldSize = world->asInt();
  }
  if (const JsonValue *mesh = root.get("mesh")) {
    const JsonValue *shape = mesh->get("shape");
    const JsonValue *axes = mesh->get("axes");
    for (size_t i = 0; axes && axes->isArray() && i < axes->size(); ++i) {
      if (!axes->at(i).isString())
        return fail("invalid \"mesh\" axes (names expected)");
      sig.meshAxes.push_back(axes->at(i).asString());
    }
    int64_t devices = 1;
    for (size_t i = 0; shape && shape->isArray() && i < shape->size(); ++i) {
      if (!shape->at(i).isInteger() || shape->at(i).asInt() < 1)
        return fail("invalid \"mesh\" shape");
      sig.meshShape.push_back(shape->at(i).asInt());
      devices *= sig.meshShape.back();
    }
    if (devices != sig.worldSize)
      return fail("the mesh has " + std::to_string(devices) +
                  " devices but \"world_size\" is " +
                  std::to_string(sig.worldSize));
    if (!sig.meshAxes.empty() && sig.meshAxes.size() != sig.meshShape.size())
      return fail("the mesh has " + std::to_string(sig.meshShape.size()) +
                  " axes but " + std::to_string(sig.meshAxes.size()) +
                  " axis names");
  }
  if (const JsonValue *axis = root.get("pipeline_axis")) {
    if (!axis->isInteger() || axis->asInt() < 0 ||
        axis->asInt() >= static_cast<int64_t>(sig.meshShape.size()))
      return fail("\"pipeline_axis\" is not an axis of the mesh");
    sig.pipelineAxis = axis->asInt();
  }
  if (const JsonValue *stages = root.get("stage_arena_bytes")) {
    if (!stages->isArray() || sig.pipelineAxis < 0)
      return fail("\"stage_arena_bytes\" needs a pipeline axis and is an "
                  "array");
    for (size_t i = 0; i < stages->size(); ++i) {
      const JsonValue &b = stages->at(i);
      if (!b.isInteger() || b.asInt() < 0 ||
          static_cast<uint64_t>(b.asInt()) > sig.arenaBytes)
        return fail("invalid \"stage_arena_bytes\" entry " + std::to_string(i));
      sig.stageArenaBytes.push_back(static_cast<uint64_t>(b.asInt()));
    }
  }
  if (const JsonValue *launches = root.get("launches")) {
    if (!launches->isArray())
      return fail("\"launches\" is not an array");
    for (size_t i = 0; i < launches->size(); ++i) {
      const JsonValue &entry = launches->at(i);
      const JsonValue *kernel = entry.get("kernel");
      if (!entry.isObject() || !kernel || !kernel->isString())
        return fail("launch " + std::to_string(i) + " has no \"kernel\"");
      LaunchSpec launch;
      launch.kernel = kernel->asString();
      for (auto [key, field] :
           {std::pair<const char *, int64_t *>{"stage", &launch.stage},
            {"microbatch", &launch.microbatch},
            {"chunk", &launch.chunk}})
        if (const JsonValue *v = entry.get(key))
          *field = v->asInt();
      if (const JsonValue *b = entry.get("backward"))
        launch.backward = b->asBool();
      if (const JsonValue *w = entry.get("weight_grad"))
        launch.weightGrad = w->asBool();
      if (const JsonValue *ts = entry.get("tensors")) {
        if (!ts->isArray())
          return fail("launch " + std::to_string(i) +
                      ": \"tensors\" is not an array");
        for (size_t j = 0; j < ts->size(); ++j) {
          if (!ts->at(j).isString())
            return fail("launch " + std::to_string(i) +
                        ": \"tensors\" entry is not a string");
          launch.tensors.push_back(ts->at(j).asString());
        }
      }
      sig.launches.push_back(std::move(launch));
    }
  }
  if (!parseTensorList(root, "params", sig.params, reason) ||
      !parseTensorList(root, "inputs", sig.inputs, reason) ||
      !parseTensorList(root, "outputs", sig.outputs, reason))
    return fail(reason);
  for (const std::vector<TensorSpec> *list :
       {&sig.params, &sig.inputs, &sig.outputs})
    for (const TensorSpec &spec : *list) {
      for (int64_t axis : spec.shardAxes)
        if (axis < 0 || (!sig.meshShape.empty() &&
                         axis >= static_cast<int64_t>(sig.meshShape.size())))
          return fail("'" + spec.name + "': \"shard\" names mesh axis " +
                      std::to_string(axis) + ", which the mesh does not have");
    }
  if (sig.isTraining() && !checkTrainingSignature(sig, reason))
    return fail(reason);
  out = std::move(sig);
  return true;
}

bool paramHeldBy(const ModelSignature &sig, const TensorSpec &spec,
                 int64_t rank) {
  if (spec.stage < 0 || sig.pipelineAxis < 0)
    return true;
  return meshGroupIndex(rank, sig.meshShape, &sig.pipelineAxis, 1) ==
         spec.stage;
}

} // namespace weft
