//===- Pipeline.cpp - Stages, their transfers and their schedule ----------===//
//
// weft-pipeline (Passes.td). Runs on the partitioned, microbatched step of
// a model cut into stages (weft-pipeline-stages, weft-autodiff,
// weft-microbatch): every op already knows its stage, microbatch and
// whether it is backward work, except what the later passes created.
//   1. Those ops get a stage: from the parameter they update or the staged
//      ops they read, else from their users (a constant or a slice of an
//      input that several stages read is copied into each). A sum over
//      the microbatches of parts several stages make (a tied parameter's
//      gradient) becomes each stage's own sum, added once.
//   2. A value one stage makes and another reads travels: weft.send_start
//      right after it is made (waited for at the end of the step), on the
//      other stage a weft.recv_start posted a unit of its schedule early and
//      its weft.comm_wait before the first reader (a weft.recv for what is
//      read after the microbatches). The loss goes to stage 0, whose first
//      rank reports it.
//   3. Each stage runs its microbatches in the order of the schedule:
//      GPipe (every forward, then every backward) or 1F1B (stage s runs
//      P - 1 - s forwards, then alternates a forward and a backward, then
//      the remaining backwards), or interleaved 1F1B on a model cut into
//      V chunks per stage (chunk c on stage c mod P, weft.chunk its index
//      there): the same pattern over the M x V units of a stage, groups of
//      P microbatches going through its chunks in turn; or ZB-H1, 1F1B
//      with each backward's weight-gradient ops (weft.weight_grad, from
//      weft-autodiff) run as a unit of their own right before the next
//      backward. The ops are list-scheduled by that order.
//   4. The stages' programs are run against each other (sends, receives,
//      waits); one that would wait forever is a schedule that cannot run
//      the model (a sum over microbatches another stage makes): gpipe
//      instead with gpipe-if-coupled, else an error naming the sum's reader.
// The function then names its pipeline axis (weft.pipeline_axis), and the
// lowering runs each op on the ranks of its stage only.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "passes/PipelineSchedule.h"
#include "passes/ScheduleByKey.h"

#include <map>

namespace weft {
#define GEN_PASS_DEF_PIPELINE
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

std::optional<int64_t> stageOf(Operation *op) {
  if (!op)
    return std::nullopt;
  if (auto s = op->getAttrOfType<IntegerAttr>("weft.stage"))
    return s.getInt();
  return std::nullopt;
}

void setStage(Operation *op, int64_t stage) {
  op->setAttr("weft.stage",
              IntegerAttr::get(IntegerType::get(op->getContext(), 64), stage));
}

/// Copies where in the schedule `from` runs (microbatch, backward) to `to`.
void copyPlace(Operation *from, Operation *to) {
  for (StringRef name : {"weft.microbatch", "weft.backward"})
    if (Attribute a = from->getAttr(name))
      to->setAttr(name, a);
}

/// Whether `op` is cheap and pure enough to repeat on every stage that
/// reads it: a constant, or a view of an input.
bool copyable(Operation *op) {
  if (isa<ConstantOp>(op))
    return true;
  if (isa<SliceOp, ReshapeOp>(op))
    return isa<BlockArgument>(op->getOperand(0));
  return false;
}

struct PipelinePass : public weft::impl::PipelineBase<PipelinePass> {
  using PipelineBase::PipelineBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("main");
    if (!func)
      return;
    auto stagesAttr = func->getAttrOfType<IntegerAttr>("weft.pipeline_stages");
    if (!stagesAttr || stagesAttr.getInt() <= 1)
      return;
    stages = stagesAttr.getInt();
    if (auto v = func->getAttrOfType<IntegerAttr>("weft.virtual_stages"))
      virtualStages = v.getInt();
    if (schedule != "gpipe" && schedule != "1f1b" &&
        schedule != "interleaved" && schedule != "zb-h1") {
      func.emitError("unknown pipeline schedule '")
          << schedule << "' (gpipe, 1f1b, interleaved or zb-h1)";
      return signalPassFailure();
    }
    if ((schedule == "interleaved") != (virtualStages > 1)) {
      func.emitError("the interleaved schedule runs a model cut into "
                     "virtual stages (weft-pipeline-stages virtual-stages "
                     "> 1), and only it does; got schedule '")
          << schedule << "' with " << virtualStages << " virtual stages";
      return signalPassFailure();
    }
    auto grids = module.getOps<shard::GridOp>();
    if (grids.empty()) {
      func.emitError("a pipeline needs the mesh's \"pp\" axis "
                     "(weft-annotate-sharding pp=...)");
      return signalPassFailure();
    }
    grid = *grids.begin();
    auto names = grid->getAttrOfType<ArrayAttr>("weft.mesh_axes");
    for (auto [i, n] : llvm::enumerate(names ? names : ArrayAttr()))
      if (cast<StringAttr>(n).getValue() == "pp")
        ppAxis = i;
    if (ppAxis < 0 || grid.getShape()[ppAxis] != stages) {
      func.emitError("the mesh has no \"pp\" axis of ")
          << stages << " stages for this pipeline";
      return signalPassFailure();
    }
    Block &body = func.getBody().front();
    for (Operation &op : body)
      if (auto m = op.getAttrOfType<IntegerAttr>("weft.microbatch"))
        microbatches = std::max(microbatches, m.getInt() + 1);
    if (schedule == "interleaved" && microbatches % stages != 0) {
      func.emitError("the interleaved schedule runs microbatches in groups "
                     "of the stage count: ")
          << microbatches << " microbatches are not a multiple of " << stages
          << " stages";
      return signalPassFailure();
    }
    if (failed(place(body)))
      return signalPassFailure();
    sumPartsPerStage(body);
    // Chunk c of an interleaved model runs on stage c mod P.
    for (Operation &op : body.without_terminator())
      if (std::optional<int64_t> c = stageOf(&op)) {
        setStage(&op, *c % stages);
        if (virtualStages > 1)
          op.setAttr("weft.chunk",
                     IntegerAttr::get(IntegerType::get(op.getContext(), 64),
                                      *c / stages));
      }
    active = schedule;
    // (What combines the microbatches is read off the program before the
    // transfers replace other stages' values with received ones.)
    markBackwardWork(body);
    Coupling coupled = findCoupled(body);
    transfer(body);
    order(body);
    // A schedule that would leave a stage waiting forever (a batch
    // statistic over microbatches another stage has not sent yet) gives way
    // to gpipe where allowed, else is refused, naming the statistic.
    if (Operation *blocked = findDeadlock(body)) {
      std::string why = describeDeadlock(coupled, blocked);
      if (!gpipeIfCoupled || active == "interleaved" || active == "gpipe") {
        (coupled.op ? coupled.op : blocked)->emitError("the ")
            << active << " schedule cannot run this pipeline: " << why
            << (active == "gpipe"         ? ""
                : active == "interleaved" ? "; use the gpipe schedule without "
                                            "virtual stages"
                                          : "; use the gpipe schedule");
        return signalPassFailure();
      }
      active = "gpipe";
      order(body);
      if (Operation *still = findDeadlock(body)) {
        still->emitError("the gpipe schedule cannot run this pipeline "
                         "either: ")
            << describeDeadlock({}, still);
        return signalPassFailure();
      }
      setPipelineFallback(module, {active, why});
    }
    func->setAttr(
        "weft.pipeline_axis",
        IntegerAttr::get(IntegerType::get(func.getContext(), 64), ppAxis));
  }

  /// The first op a stage would wait at forever when every stage runs its
  /// ops in block order: a received value whose send comes after a wait of
  /// the sender's that cannot end (sends start without waiting; a send's
  /// completion waits for its receive to be posted). Null when every stage
  /// runs to its end.
  Operation *findDeadlock(Block &body) {
    std::vector<SmallVector<Operation *>> program(stages);
    for (Operation &op : body.without_terminator())
      if (std::optional<int64_t> s = stageOf(&op); s && *s >= 0 && *s < stages)
        program[*s].push_back(&op);
    DenseSet<int64_t> sent, posted; // by tag (one per transfer)
    std::vector<size_t> pc(stages, 0);
    // Whether `op` can run now; records what it starts.
    auto step = [&](Operation *op) {
      if (auto send = dyn_cast<SendStartOp>(op)) {
        sent.insert(send.getTag());
      } else if (auto start = dyn_cast<RecvStartOp>(op)) {
        posted.insert(start.getTag());
      } else if (auto recv = dyn_cast<RecvOp>(op)) {
        posted.insert(recv.getTag());
        return sent.contains(recv.getTag());
      } else if (auto wait = dyn_cast<CommWaitOp>(op)) {
        Operation *pending = wait.getPending().getDefiningOp();
        if (auto start = dyn_cast_or_null<RecvStartOp>(pending))
          return sent.contains(start.getTag());
        if (auto send = dyn_cast_or_null<SendStartOp>(pending))
          return posted.contains(send.getTag());
      }
      return true;
    };
    for (bool progress = true; progress;) {
      progress = false;
      for (int64_t s = 0; s < stages; ++s)
        for (; pc[s] < program[s].size() && step(program[s][pc[s]]); ++pc[s])
          progress = true;
    }
    for (int64_t s = 0; s < stages; ++s)
      if (pc[s] < program[s].size())
        return program[s][pc[s]];
    return nullptr;
  }

  /// An op of a microbatch that reads a value combining what another stage
  /// (or chunk) made for later microbatches than its own: weft-microbatch
  /// sums clones into ops of no microbatch, such as a batch statistic of
  /// received activations each microbatch is normalized with (forward), or
  /// the sums of received gradients each microbatch's input gradient needs
  /// (backward). What a stage combines from its own inputs (a loss's label
  /// count) is there at once, and a stage that receives microbatch m of
  /// what a combining stage made waits for that stage alone, which sends it
  /// when its own schedule comes to m: a received value counts for its
  /// microbatch, not for what its stage combined.
  struct Coupling {
    Operation *op = nullptr;
    bool backward = false;
  };

  /// The coupled op whose stage constrains the schedule most: the first
  /// whose stage runs more microbatches than coupledMicrobatchLimit allows
  /// (PipelineSchedule.h), else the one on the latest stage (chunk). Only
  /// for the message: findDeadlock decides.
  Coupling findCoupled(Block &body) {
    auto number = [](Operation *op, StringRef name) -> std::optional<int64_t> {
      if (auto a = op ? op->getAttrOfType<IntegerAttr>(name) : IntegerAttr())
        return a.getInt();
      return std::nullopt;
    };
    auto unitOf = [&](Operation *op) {
      return number(op, "weft.chunk").value_or(0) * stages +
             stageOf(op).value_or(0);
    };
    // Per op: the latest microbatch it depends on, and the latest one whose
    // work on another stage (or chunk) it waits for (block order is a
    // topological order).
    DenseMap<Operation *, std::pair<int64_t, int64_t>> latest;
    Coupling found, short_;
    int64_t foundUnit = -1;
    for (Operation &op : body.without_terminator()) {
      std::optional<int64_t> m = number(&op, "weft.microbatch");
      int64_t any = m.value_or(-1), remote = -1;
      for (Value v : op.getOperands()) {
        Operation *def = v.getDefiningOp();
        auto it = def ? latest.find(def) : latest.end();
        if (it == latest.end())
          continue;
        any = std::max(any, it->second.first);
        if (unitOf(def) == unitOf(&op))
          remote = std::max(remote, it->second.second);
        else
          remote = std::max(
              remote,
              number(def, "weft.microbatch").value_or(it->second.first));
      }
      latest[&op] = {any, remote};
      if (!m || remote <= *m)
        continue;
      const int64_t unit = unitOf(&op), s = *stageOf(&op);
      const bool backward = op.hasAttr("weft.backward");
      if (!backward && unit == 0)
        continue;
      // A backward on the last stage (chunk) combines its own gradients.
      const bool last = unit == stages * virtualStages - 1;
      if (!short_.op && !(backward && last) &&
          microbatches > coupledMicrobatchLimit(stages, s, backward))
        short_ = {&op, backward};
      if (unit > foundUnit) {
        found = {&op, backward};
        foundUnit = unit;
      }
    }
    return short_.op ? short_ : found;
  }

  /// Why the schedule cannot run: the coupling, else where it would wait.
  std::string describeDeadlock(Coupling coupled, Operation *blocked) {
    if (coupled.op) {
      std::string stage = "stage " + std::to_string(*stageOf(coupled.op));
      if (auto c = coupled.op->getAttrOfType<IntegerAttr>("weft.chunk"))
        stage = "chunk " + std::to_string(c.getInt()) + " of " + stage;
      if (!coupled.backward)
        return stage +
               "'s forward combines the microbatches (a statistic of the "
               "whole batch, such as a training-mode BatchNormalization's), "
               "so every earlier stage must send all its forwards before "
               "waiting for a backward, as only gpipe does";
      return stage +
             "'s backward combines the microbatches (the gradient of a "
             "statistic of the whole batch, such as a training-mode "
             "BatchNormalization's), so it must send all its forwards before "
             "its first backward, as only gpipe does";
    }
    std::string what;
    llvm::raw_string_ostream os(what);
    os << "stage " << stageOf(blocked).value_or(0) << " would wait forever at '"
       << blocked->getName() << "'";
    if (auto m = blocked->getAttrOfType<IntegerAttr>("weft.microbatch"))
      os << " of microbatch " << m.getInt();
    return what;
  }

  /// 1. Stages for the ops later passes created.
  LogicalResult place(Block &body) {
    // A parameter read again by the optimizer (weft-build-train-step's own
    // weft.param) lives on the stage whose forward reads it.
    llvm::StringMap<int64_t> paramStage;
    for (Operation &op : body.without_terminator())
      if (auto param = dyn_cast<ParamOp>(op))
        if (std::optional<int64_t> s = stageOf(param))
          paramStage.try_emplace(param.getName(), *s);
    for (Operation &op : body.without_terminator())
      if (auto param = dyn_cast<ParamOp>(op))
        if (!stageOf(param))
          if (auto it = paramStage.find(param.getName());
              it != paramStage.end())
            setStage(param, it->second);
    for (Operation &op : body.without_terminator()) {
      if (stageOf(&op))
        continue;
      std::optional<int64_t> stage;
      int64_t largest = -1;
      for (Value v : op.getOperands()) {
        Operation *def = v.getDefiningOp();
        std::optional<int64_t> s = stageOf(def);
        if (!s)
          continue;
        if (isa<ParamOp>(def)) { // an optimizer step: the parameter's stage
          stage = s;
          break;
        }
        // Operands of several stages (a gradient scaled by gradient
        // clipping's coefficient): the stage of the largest, so that the
        // small ones travel; the later stage between equals.
        auto type = dyn_cast<RankedTensorType>(v.getType());
        int64_t elements = type ? type.getNumElements() : 0;
        if (elements > largest || (elements == largest && *s > *stage)) {
          stage = s;
          largest = elements;
        }
      }
      if (stage)
        setStage(&op, *stage);
    }
    for (Operation &op :
         llvm::make_early_inc_range(llvm::reverse(body.without_terminator()))) {
      if (stageOf(&op))
        continue;
      std::map<int64_t, SmallVector<OpOperand *>> readers;
      for (OpOperand &use : op.getUses())
        if (std::optional<int64_t> s = stageOf(use.getOwner()))
          readers[*s].push_back(&use);
      if (readers.empty()) {
        setStage(&op, 0);
        continue;
      }
      if (readers.size() > 1 && isa<ParamOp>(op))
        return op.emitError("parameter '")
               << cast<ParamOp>(op).getName() << "' is read by stages "
               << readers.begin()->first << " and " << readers.rbegin()->first;
      auto it = readers.begin();
      setStage(&op, it->first);
      if (!copyable(&op))
        continue; // made once, sent to the others
      OpBuilder b(&op);
      for (++it; it != readers.end(); ++it) {
        Operation *copy = b.clone(op);
        setStage(copy, it->first);
        for (OpOperand *use : it->second)
          use->set(copy->getResult(0));
      }
    }
    return success();
  }

  /// Work on a microbatch's gradients is backward work, whoever made it (the
  /// sum of a tied parameter's gradients, a partitioner's collective, an op
  /// a rewrite made anew): marked before the transfers, whose receives take
  /// their place from their first reader.
  void markBackwardWork(Block &body) {
    for (Operation &op : body.without_terminator())
      if (op.hasAttr("weft.microbatch") && !op.hasAttr("weft.backward") &&
          llvm::any_of(op.getOperands(), [](Value v) {
            Operation *def = v.getDefiningOp();
            return def && def->hasAttr("weft.backward") &&
                   def->hasAttr("weft.microbatch");
          }))
        op.setAttr("weft.backward", UnitAttr::get(op.getContext()));
  }

  /// 1b. A tied parameter's gradient adds, in each microbatch, the parts
  /// of the stages that read it (received from the others), then sums the
  /// microbatches (weft-microbatch's chain of weft.combines_microbatches
  /// adds): a transfer per microbatch. Reassociated, each stage sums its own
  /// parts over the microbatches and its total travels once per step, as
  /// Megatron sums its embedding's gradient between the first and the last
  /// stage once per step.
  void sumPartsPerStage(Block &body) {
    SmallVector<AddOp> chains;
    auto combines = [](Operation *op) {
      return op && isa<AddOp>(op) && op->hasAttr("weft.combines_microbatches");
    };
    for (Operation &op : body.without_terminator())
      if (combines(&op) && !llvm::any_of(op.getUsers(), combines))
        chains.push_back(cast<AddOp>(op));
    for (AddOp top : chains) {
      std::optional<int64_t> home = stageOf(top);
      // The chain's parts, in microbatch order: ((p0 + p1) + p2) ...
      SmallVector<Value> parts;
      SmallVector<Operation *> dead;
      Value acc = top;
      bool ok = home.has_value();
      while (ok && combines(acc.getDefiningOp())) {
        auto add = cast<AddOp>(acc.getDefiningOp());
        ok = (add == top || add->hasOneUse()) && stageOf(add) == home;
        dead.push_back(add);
        parts.push_back(add.getRhs());
        acc = add.getLhs();
      }
      parts.push_back(acc);
      std::reverse(parts.begin(), parts.end());
      // Each part's terms by stage: the leaves of its single-use adds of
      // one type within its microbatch.
      std::map<int64_t, SmallVector<Value>> terms;
      std::function<void(Value)> flatten = [&](Value v) {
        auto add = v.getDefiningOp<AddOp>();
        if (add && add->hasOneUse() && add->hasAttr("weft.microbatch") &&
            add.getLhs().getType() == v.getType() &&
            add.getRhs().getType() == v.getType()) {
          dead.push_back(add);
          flatten(add.getLhs());
          flatten(add.getRhs());
          return;
        }
        std::optional<int64_t> s = stageOf(v.getDefiningOp());
        if (!s)
          ok = false;
        else
          terms[*s].push_back(v);
      };
      for (Value part : parts)
        if (ok)
          flatten(part);
      if (!ok || terms.size() < 2)
        continue;
      // Each stage's sum (in microbatch order), then the stages' totals on
      // the chain's own stage, its own total first.
      OpBuilder b(top);
      auto sum = [&](ArrayRef<Value> vs, int64_t stage) {
        Value total = vs.front();
        for (Value v : vs.drop_front()) {
          total = AddOp::create(b, top.getLoc(), v.getType(), total, v);
          setStage(total.getDefiningOp(), stage);
          total.getDefiningOp()->setAttr("weft.combines_microbatches",
                                         b.getUnitAttr());
        }
        return total;
      };
      SmallVector<Value> totals;
      if (auto it = terms.find(*home); it != terms.end())
        totals.push_back(sum(it->second, *home));
      for (auto &[stage, vs] : terms)
        if (stage != *home)
          totals.push_back(sum(vs, stage));
      Value total = totals.front();
      for (Value v : ArrayRef(totals).drop_front()) {
        total = AddOp::create(b, top.getLoc(), v.getType(), total, v);
        setStage(total.getDefiningOp(), *home);
      }
      top.getResult().replaceAllUsesWith(total);
      // Dead now: the chain, then the parts' adds (users before operands).
      for (Operation *op : dead)
        op->erase();
    }
  }

  /// 2. Sends and receives between stages.
  void transfer(Block &body) {
    Operation *ret = body.getTerminator();
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    auto axes = DenseI16ArrayAttr::get(grid.getContext(),
                                       {static_cast<int16_t>(ppAxis)});
    auto gridRef = FlatSymbolRefAttr::get(grid.getSymNameAttr());
    OpBuilder b(grid.getContext());
    for (Operation *op : ops) {
      int64_t from = *stageOf(op);
      for (Value v : op->getResults()) {
        // Readers per stage, in program order; the results go to stage 0.
        std::map<int64_t, SmallVector<OpOperand *>> readers;
        for (OpOperand &use : v.getUses()) {
          Operation *user = use.getOwner();
          int64_t to = user == ret ? 0 : stageOf(user).value_or(from);
          if (to != from)
            readers[to].push_back(&use);
        }
        for (auto &[to, uses] : readers) {
          int64_t tag = nextTag++, slot = nextSlot++;
          b.setInsertionPointAfter(op);
          auto send = SendStartOp::create(
              b, op->getLoc(), v, gridRef, axes, b.getI64IntegerAttr(to),
              b.getI64IntegerAttr(tag), b.getI64IntegerAttr(slot));
          setStage(send, from);
          copyPlace(op, send);
          if (Attribute c = op->getAttr("weft.chunk"))
            send->setAttr("weft.chunk", c);
          b.setInsertionPoint(ret);
          auto wait = CommWaitOp::create(b, op->getLoc(), v.getType(), send,
                                         b.getI64IntegerAttr(slot));
          setStage(wait, from);
          wait->setAttr("weft.after_microbatches", b.getUnitAttr());
          // Received right before the first reader.
          Operation *first = uses.front()->getOwner();
          for (OpOperand *use : uses)
            if (use->getOwner()->isBeforeInBlock(first))
              first = use->getOwner();
          b.setInsertionPoint(first);
          Value received;
          if (first == ret || !first->hasAttr("weft.microbatch")) {
            // Read once the microbatches are done: received then.
            auto recv = RecvOp::create(b, op->getLoc(), v.getType(), gridRef,
                                       axes, b.getI64IntegerAttr(from),
                                       b.getI64IntegerAttr(tag));
            setStage(recv, to);
            // It waits for the microbatch of the sender's that made it
            // (a batch statistic combining microbatches another stage
            // made), else for its reader.
            copyPlace(first == ret || op->hasAttr("weft.microbatch") ? op
                                                                     : first,
                      recv);
            // A value made after the microbatches (gradient clipping's
            // sums and coefficient) is received after them too: a blocking
            // receive that nothing orders would otherwise run first and
            // wait for work that needs this stage's microbatches.
            if (first == ret || !op->hasAttr("weft.microbatch"))
              recv->setAttr("weft.after_microbatches", b.getUnitAttr());
            received = recv.getResult();
          } else {
            // A microbatch's value: the receive is posted a unit of the
            // schedule early (weft.early) and waited for before the first
            // reader, so the transfer overlaps the stage's work before.
            int64_t recvSlot = nextSlot++;
            auto start = RecvStartOp::create(
                b, op->getLoc(), v.getType(), gridRef, axes,
                b.getI64IntegerAttr(from), b.getI64IntegerAttr(tag),
                b.getI64IntegerAttr(recvSlot));
            auto wait = CommWaitOp::create(b, op->getLoc(), v.getType(), start,
                                           b.getI64IntegerAttr(recvSlot));
            for (Operation *o : {start.getOperation(), wait.getOperation()}) {
              setStage(o, to);
              copyPlace(first, o);
              if (Attribute c = first->getAttr("weft.chunk"))
                o->setAttr("weft.chunk", c);
            }
            start->setAttr("weft.early", b.getUnitAttr());
            received = wait.getResult();
          }
          for (OpOperand *use : uses)
            use->set(received);
        }
      }
    }
  }

  /// The position of (microbatch, chunk, backward, weight gradient) in
  /// stage `s`'s schedule (PipelineSchedule.h).
  int64_t slotOf(int64_t s, int64_t m, int64_t chunk, bool backward,
                 bool weight) const {
    return pipelineSlot(active, stages, virtualStages, microbatches, s, m,
                        chunk, backward, weight);
  }

  /// 3. Each stage's ops in its schedule's order.
  void order(Block &body) {
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    // Weight-gradient work is a unit of its own in ZB-H1 only; elsewhere it
    // is part of the backward.
    if (active != "zb-h1")
      for (Operation *op : ops)
        op->removeAttr("weft.weight_grad");
    // What only a weight gradient reads is weight-gradient work too.
    for (Operation *op : ops) {
      if (!op->hasAttr("weft.microbatch") || !op->hasAttr("weft.backward") ||
          op->hasAttr("weft.weight_grad"))
        continue;
      bool readsWeight = false, readsOther = false;
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (!def || !def->hasAttr("weft.backward") ||
            !def->hasAttr("weft.microbatch"))
          continue;
        (def->hasAttr("weft.weight_grad") ? readsWeight : readsOther) = true;
      }
      if (readsWeight && !readsOther)
        op->setAttr("weft.weight_grad", UnitAttr::get(op->getContext()));
    }
    scheduleByKey(body, [&](Operation *op) -> std::optional<int64_t> {
      if (isa<ParamUpdateOp>(op) || op->hasAttr("weft.after_microbatches"))
        return kScheduleLatest;
      if (auto m = op->getAttrOfType<IntegerAttr>("weft.microbatch")) {
        auto c = op->getAttrOfType<IntegerAttr>("weft.chunk");
        // Two keys per unit: an early receive goes between the unit two
        // before and the one before its own.
        int64_t slot = slotOf(*stageOf(op), m.getInt(), c ? c.getInt() : 0,
                              op->hasAttr("weft.backward"),
                              op->hasAttr("weft.weight_grad"));
        return op->hasAttr("weft.early") ? 2 * slot - 3 : 2 * slot;
      }
      return std::nullopt;
    });
  }

  shard::GridOp grid;
  /// The schedule run: `schedule`, or gpipe (gpipeIfCoupled).
  std::string active;
  int64_t stages = 1, virtualStages = 1, microbatches = 1, ppAxis = -1;
  int64_t nextTag = 0, nextSlot = 1000000;
};

} // namespace

static constexpr llvm::StringLiteral kFallbackSchedule =
    "weft.pipeline_schedule";
static constexpr llvm::StringLiteral kFallbackReason =
    "weft.pipeline_schedule_reason";

void weft::setPipelineFallback(ModuleOp module, const PipelineFallback &ran) {
  MLIRContext *ctx = module.getContext();
  module->setAttr(kFallbackSchedule, StringAttr::get(ctx, ran.schedule));
  module->setAttr(kFallbackReason, StringAttr::get(ctx, ran.reason));
}

std::optional<PipelineFallback> weft::getPipelineFallback(ModuleOp module) {
  auto schedule = module->getAttrOfType<StringAttr>(kFallbackSchedule);
  auto reason = module->getAttrOfType<StringAttr>(kFallbackReason);
  if (!schedule || !reason)
    return std::nullopt;
  return PipelineFallback{schedule.str(), reason.str()};
}
