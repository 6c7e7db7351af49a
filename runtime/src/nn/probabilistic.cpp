// Interaction types and the probabilistic modules (the distributions they
// sample from: distributions.cpp).
#include <fmt/format.h>
#include <torch/torch.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numbers>
#include <sstream>

#include "tensordict/errors.h"
#include "tensordict/nn/distributions.h"
#include "tensordict/nn/probabilistic.h"
#include "nn/shapes.h"
#include "nn/text.h"

namespace tensordict::nn {

// ---- InteractionType -------------------------------------------------------------

namespace {
thread_local std::optional<InteractionType> current_interaction_type;
}

std::string_view to_string(InteractionType type) {
  switch (type) {
    case InteractionType::MODE: return "MODE";
    case InteractionType::MEDIAN: return "MEDIAN";
    case InteractionType::MEAN: return "MEAN";
    case InteractionType::RANDOM: return "RANDOM";
  }
  return "?";
}

InteractionType interaction_type_from_str(std::string_view name) {
  std::string upper(name);
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (auto t : {InteractionType::MODE, InteractionType::MEDIAN, InteractionType::MEAN, InteractionType::RANDOM}) {
    if (to_string(t) == upper) return t;
  }
  throw ValueError(fmt::format("The provided interaction type {} is unsupported!", name));
}

std::optional<InteractionType> interaction_type() { return current_interaction_type; }

InteractionTypeGuard::InteractionTypeGuard(std::optional<InteractionType> type)
    : previous_(current_interaction_type) {
  current_interaction_type = type;
}
InteractionTypeGuard::~InteractionTypeGuard() { current_interaction_type = previous_; }

// ---- composite_lp_aggregate ------------------------------------------------------

namespace {
// tensordict's _strtobool.
bool truth_value(std::string_view value) {
  std::string lower(value);
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* yes : {"y", "yes", "t", "true", "on", "1"}) {
    if (lower == yes) return true;
  }
  for (const char* no : {"n", "no", "f", "false", "off", "0"}) {
    if (lower == no) return false;
  }
  throw ValueError(fmt::format("invalid truth value '{}'", value));
}

// Process-wide, not thread_local like the interaction type: tensordict keeps
// one value for the process (nn/utils.py, _composite_lp_aggregate), because a
// module fixes its log-probability keys when it is built and every thread
// that reads them must see the same keys. Atomic, so that a thread reading it
// while another sets it is no data race. Initialized on first use from
// COMPOSITE_LP_AGGREGATE (a ValueError for an invalid value, again at the
// next use).
std::atomic<bool>& lp_aggregate() {
  static std::atomic<bool> value{[] {
    const char* env = std::getenv("COMPOSITE_LP_AGGREGATE");
    return env != nullptr && truth_value(env);
  }()};
  return value;
}
}  // namespace

bool composite_lp_aggregate() { return lp_aggregate().load(); }

CompositeLpAggregateGuard::CompositeLpAggregateGuard(LpAggregate mode)
    : previous_(lp_aggregate().exchange(mode == LpAggregate::Aggregate)) {}
CompositeLpAggregateGuard::~CompositeLpAggregateGuard() { lp_aggregate().store(previous_); }

// ---- ProbabilisticTensorDictModule -----------------------------------------------

DistributionKeys::DistributionKeys(const Keys& keys) {
  for (const auto& k : keys) map_.emplace_back(k.back(), k);
}

namespace {
Keys values_of(const DistributionKeys& keys) {
  Keys out;
  for (const auto& [name, key] : keys.map()) out.push_back(key);
  return out;
}
}  // namespace

namespace {
// Whether `key` lies strictly inside `other` (tensordict's _is_inside).
bool is_inside(const NestedKey& key, const NestedKey& other) {
  return key.size() > other.size() && std::equal(other.path().begin(), other.path().end(), key.path().begin());
}

constexpr std::string_view kLogProbSuffix = "_log_prob";
}  // namespace

ProbabilisticTensorDictModuleImpl::ProbabilisticTensorDictModuleImpl(DistributionKeys in_keys, Keys out_keys,
                                                                     ProbabilisticOptions options)
    : TensorDictModuleBase(values_of(in_keys), std::move(out_keys)),
      dist_keys_(std::move(in_keys)),
      options_(std::move(options)),
      sample_keys_(out_keys_),
      aggregate_at_init_(composite_lp_aggregate()) {
  if (is_composite()) {
    if (in_keys_.size() != 1) {
      throw ValueError(fmt::format(
          "ProbabilisticTensorDictModule: a CompositeDistribution reads its parameters from one in_key (a "
          "tensordict), got in_keys={}",
          text::keys_repr(in_keys_)));
    }
    // tensordict's out_keys=None: the distribution's sample keys.
    if (out_keys_.empty()) out_keys_ = sample_keys_ = options_.distribution.composite_sample_keys;
  }
  if (out_keys_.empty()) throw ValueError("ProbabilisticTensorDictModule: out_keys must name the sample's key");
  if (!options_.distribution.make && !is_composite()) {
    throw ValueError("ProbabilisticTensorDictModule: no distribution class");
  }
  // The keys as tensordict's __init__ sets them (probabilistic.py).
  const bool aggregate = aggregate_at_init_;
  const bool one_key = sample_keys_.size() == 1;
  std::optional<Keys> lp_keys = options_.log_prob_keys;
  std::optional<NestedKey> lp_key = options_.log_prob_key;
  if (!lp_keys) {
    if (one_key && lp_key) {
      lp_keys = Keys{*lp_key};
    } else if (aggregate) {
      if (one_key) lp_keys = Keys{kSampleLogProbKey};
    } else {
      lp_keys.emplace();
      for (const auto& key : sample_keys_) lp_keys->push_back(text::add_suffix(key, kLogProbSuffix));
    }
  } else if (aggregate) {
    throw RuntimeError(
        "composite_lp_aggregate is set to True but log_prob_keys were passed. "
        "When composite_lp_aggregate() returns ``True``, log_prob_key must be used instead.");
  }
  if (!lp_key) {
    if (aggregate) {
      lp_key = kSampleLogProbKey;
    } else if (one_key) {
      lp_key = text::add_suffix(sample_keys_[0], kLogProbSuffix);
    }
  } else if (!one_key && !aggregate) {
    throw RuntimeError(
        "composite_lp_aggregate is set to `False` but a `log_prob_key` was passed. "
        "When composite_lp_aggregate() returns ``False``, log_prob_keys must be used instead.");
  }
  log_prob_key_ = std::move(lp_key);
  log_prob_keys_ = std::move(lp_keys);
  if (options_.return_log_prob) {
    check_log_prob_keys();
    // tensordict's out_keys property, with the value fixed here.
    if (!aggregate) {
      const Keys& lps = *log_prob_keys_;
      const std::size_t tail = std::min(lps.size(), out_keys_.size());
      if (!std::equal(out_keys_.end() - static_cast<std::ptrdiff_t>(tail), out_keys_.end(), lps.begin(), lps.end())) {
        out_keys_.insert(out_keys_.end(), lps.begin(), lps.end());
      }
    } else if (!text::contains_key(out_keys_, *log_prob_key_)) {
      out_keys_.push_back(*log_prob_key_);
    }
  }
}

void ProbabilisticTensorDictModuleImpl::check_log_prob_keys() const {
  // The default keys behave as they always did.
  Keys default_keys{kSampleLogProbKey};
  for (const auto& key : sample_keys_) default_keys.push_back(text::add_suffix(key, kLogProbSuffix));
  const Keys lp_keys = log_prob_keys_ ? *log_prob_keys_ : Keys{*log_prob_key_};
  std::string clashes;
  for (const auto& lp_key : lp_keys) {
    if (text::contains_key(default_keys, lp_key)) continue;
    for (const auto& sample_key : sample_keys_) {
      if (lp_key == sample_key || is_inside(lp_key, sample_key) || is_inside(sample_key, lp_key)) {
        clashes += fmt::format("{}log-probability key {} for sample key {}", clashes.empty() ? "" : ", ", lp_key.repr(),
                               sample_key.repr());
      }
    }
  }
  if (!clashes.empty()) {
    throw ValueError(
        "A custom log-probability key cannot be a sample key, lie inside one or hold one, since writing the "
        "log-probability would overwrite the sample. Got " +
        clashes + ".");
  }
}

bool ProbabilisticTensorDictModuleImpl::check_aggregate(std::string_view property) const {
  const bool aggregate = composite_lp_aggregate();
  if (aggregate != aggregate_at_init_) {
    throw RuntimeError(fmt::format(
        "composite_lp_aggregate is set to `{}`, but the class was instantiated with `{}` which may affect the {} "
        "property.",
        aggregate ? "True" : "False", aggregate_at_init_ ? "True" : "False", property));
  }
  return aggregate;
}

NestedKey ProbabilisticTensorDictModuleImpl::log_prob_key() const {
  if (!check_aggregate("log_prob_key")) {
    const Keys keys = log_prob_keys();
    if (keys.size() == 1) return keys[0];
    throw RuntimeError(fmt::format(
        "composite_lp_aggregate is set to ``False``, hence {0}.log_prob_key cannot be accessed unless there is one "
        "and only one element in log_prob_keys (got log_prob_keys={1}). When composite_lp_aggregate() returns "
        "``False``, try to use {0}.log_prob_keys instead.",
        type_name(), text::keys_repr(keys)));
  }
  return *log_prob_key_;
}

Keys ProbabilisticTensorDictModuleImpl::log_prob_keys() const {
  if (check_aggregate("log_prob_keys")) return {log_prob_key()};
  return *log_prob_keys_;
}

std::shared_ptr<CompositeDistribution> ProbabilisticTensorDictModuleImpl::get_composite_dist(
    const TensorDict& td) const {
  if (!is_composite()) {
    throw TypeError(fmt::format("{}: the distribution class is {}, not a CompositeDistribution: use get_dist",
                                type_name(), options_.distribution.name));
  }
  check_inputs(td, in_keys_);
  const std::optional<Value> params = td.get_value(in_keys_[0]);
  if (!params->is_tensordict()) {
    throw TypeError(fmt::format("{}: a CompositeDistribution reads a tensordict of parameters at {}, got a {}",
                                type_name(), text::key_str(in_keys_[0]), params->is_tensor() ? "tensor" : "non-tensor"));
  }
  return options_.distribution.make_composite(params->tensordict());
}

std::shared_ptr<Distribution> ProbabilisticTensorDictModuleImpl::get_dist(const TensorDict& td) const {
  if (is_composite()) {
    throw TypeError(fmt::format("{}: the distribution is a CompositeDistribution, which samples tensordicts: use "
                                "get_composite_dist",
                                type_name()));
  }
  check_inputs(td, in_keys_);
  DistParams params;
  for (const auto& [name, key] : dist_keys_.map()) params[name] = td.get(key);
  try {
    return options_.distribution.make(params);
  } catch (const std::invalid_argument&) {
    rethrow_reworded([&](std::string_view what) { return fmt::format("{}: {}", type_name(), what); });
  }
}

at::Tensor ProbabilisticTensorDictModuleImpl::dist_sample(const Distribution& dist,
                                                          std::optional<InteractionType> type) const {
  const auto& num_samples = options_.num_samples;
  const InteractionType chosen = type.value_or(options_.default_interaction_type);
  if (chosen == InteractionType::RANDOM) {
    return dist.has_rsample() ? dist.rsample(num_samples) : dist.sample(num_samples);
  }
  at::Tensor value;
  switch (chosen) {
    case InteractionType::MODE:
      value = dist.mode();
      break;
    case InteractionType::MEDIAN:
      value = dist.median();
      break;
    case InteractionType::MEAN:
      try {
        value = dist.mean();
      } catch (const NotImplementedError&) {
        const int64_t n = options_.n_empirical_estimate;
        at::Tensor samples = dist.has_rsample() ? dist.rsample({n}) : dist.sample({n});
        if (!samples.is_floating_point()) samples = samples.to(at::kFloat);
        value = samples.mean(0);
      }
      break;
    default:
      throw ValueError("dist_sample: an InteractionType value outside MODE, MEDIAN, MEAN, RANDOM");
  }
  // Only RANDOM draws num_samples values: the one value is repeated.
  if (!num_samples.empty()) value = value.expand(concat(num_samples, value.sizes()));
  return value;
}

at::Tensor ProbabilisticTensorDictModuleImpl::log_prob(const TensorDict& td) const {
  if (is_composite()) {
    // tensordict's: the summed tensor while composite_lp_aggregate() is
    // true, else the tensordict of the components', which is not a tensor.
    if (composite_lp_aggregate()) return get_composite_dist(td)->log_prob_sum(td);
    throw TypeError(fmt::format("{}: while composite_lp_aggregate() is false, a CompositeDistribution's "
                                "log-probability is a tensordict: use get_composite_dist(td)->log_prob(td)",
                                type_name()));
  }
  return log_prob(td, *get_dist(td));
}

at::Tensor ProbabilisticTensorDictModuleImpl::log_prob(const TensorDict& td, const Distribution& dist) const {
  check_inputs(td, {sample_keys_[0]});
  return dist.log_prob(td.get(sample_keys_[0]));
}

TensorDict ProbabilisticTensorDictModuleImpl::run_impl(const TensorDict& td,
                                                           const std::optional<TensorDict>& out) {
  return sample_into(td, out, /*requires_sample=*/true);
}

TensorDict ProbabilisticTensorDictModuleImpl::run(const TensorDict& td,
                                                      const std::optional<TensorDict>& out, bool requires_sample) {
  return run_selecting(td, out, [&](const TensorDict& t, const std::optional<TensorDict>& o) {
    return sample_into(t, o, requires_sample);
  });
}

TensorDict ProbabilisticTensorDictModuleImpl::composite_sample(const CompositeDistribution& dist,
                                                               std::optional<InteractionType> type) const {
  const auto& num_samples = options_.num_samples;
  const InteractionType chosen = type.value_or(options_.default_interaction_type);
  // A CompositeDistribution has no rsample flag: sample(), as in tensordict.
  if (chosen == InteractionType::RANDOM) return dist.sample(num_samples);
  TensorDict value;
  switch (chosen) {
    case InteractionType::MODE:
      value = dist.mode();
      break;
    case InteractionType::MEDIAN:
      throw NotImplementedError("CompositeDistribution.median is not implemented");
    case InteractionType::MEAN:
      try {
        value = dist.mean();
      } catch (const NotImplementedError&) {
        value = dist.sample({options_.n_empirical_estimate}).apply(
            [](const at::Tensor& t) { return (t.is_floating_point() ? t : t.to(at::kFloat)).mean(0); },
            dist.batch_shape());
      }
      break;
    default:
      throw ValueError("composite_sample: an InteractionType value outside MODE, MEDIAN, MEAN, RANDOM");
  }
  // Only RANDOM draws num_samples values: the one value is repeated.
  if (!num_samples.empty()) value = value.expand(concat(num_samples, value.batch_size()));
  return value;
}

TensorDict ProbabilisticTensorDictModuleImpl::composite_sample_into(const TensorDict& td,
                                                                    const std::optional<TensorDict>& out,
                                                                    bool requires_sample) {
  TensorDict dest = out ? *out : td;
  const auto dist = get_composite_dist(td);
  // Before anything is written: a RuntimeError when composite_lp_aggregate()
  // changed since the module was built.
  const bool aggregate = options_.return_log_prob && check_aggregate("log_prob_key");
  TensorDict values;
  if (requires_sample) {
    values = composite_sample(*dist, interaction_type());
    if (!options_.num_samples.empty()) dest = dest.expand(concat(options_.num_samples, dest.batch_size()));
  } else {
    values = td.select(dist->sample_keys());
  }
  if (options_.return_log_prob) {
    const TensorDict lp = dist->log_prob(values);
    if (aggregate) {
      values.update(lp);
      values.set(*log_prob_key_, dist->log_prob_sum(values));
    } else {
      // tensordict's _update_td_lp: each component's <key>_log_prob at the
      // module's log-probability key.
      const Keys sample_keys = dist->sample_keys();
      const Keys& lp_keys = *log_prob_keys_;
      for (std::size_t i = 0; i < sample_keys.size(); ++i) {
        const NestedKey from = text::add_suffix(sample_keys[i], kLogProbSuffix);
        values.set(i < lp_keys.size() ? lp_keys[i] : from, lp.get(from));
      }
    }
  }
  if (!requires_sample) values = values.exclude(dist->sample_keys());
  dest.update(values);
  return dest;
}

TensorDict ProbabilisticTensorDictModuleImpl::sample_into(const TensorDict& td,
                                                              const std::optional<TensorDict>& out,
                                                              bool requires_sample) {
  if (is_composite()) return composite_sample_into(td, out, requires_sample);
  TensorDict dest = out ? *out : td;
  const auto dist = get_dist(td);
  // Before anything is written: a RuntimeError when composite_lp_aggregate()
  // changed since the module was built.
  const std::optional<NestedKey> lp_key =
      options_.return_log_prob ? std::optional<NestedKey>(log_prob_key()) : std::nullopt;
  if (requires_sample) {
    at::Tensor value = dist_sample(*dist, interaction_type());
    // A new tensordict with the num_samples leading dims (tensordict expands
    // the output): the input does not get the outputs.
    if (!options_.num_samples.empty()) dest = dest.expand(concat(options_.num_samples, dest.batch_size()));
    dest.set(sample_keys_[0], value);
    if (lp_key) dest.set(*lp_key, dist->log_prob(value));
  } else if (lp_key) {
    dest.set(*lp_key, log_prob(td, *dist));
  }
  return dest;
}

std::string ProbabilisticTensorDictModuleImpl::repr() const {
  std::string body = fmt::format(
      "distribution_class={},\ndefault_interaction_type={},\nreturn_log_prob={},\nin_keys={},\nout_keys={}",
      options_.distribution.name, to_string(options_.default_interaction_type),
      options_.return_log_prob ? "True" : "False", text::keys_repr(in_keys_), text::keys_repr(out_keys()));
  std::string indented = "    ";
  for (char c : body) {
    indented += c;
    if (c == '\n') indented += "    ";
  }
  return fmt::format("{}(\n{})", type_name(), indented);
}

// ---- ProbabilisticTensorDictSequential -------------------------------------------

ProbabilisticTensorDictSequentialImpl::ProbabilisticTensorDictSequentialImpl(std::vector<ModulePtr> modules,
                                                                             std::vector<std::string> names,
                                                                             const SequentialOptions& options)
    : TensorDictSequentialImpl(std::move(modules), std::move(names), options) {
  // The base constructor's assign() ran the base's hooks.
  check_modules(modules_);
  modules_changed();
}

ProbabilisticTensorDictSequentialImpl::ProbabilisticTensorDictSequentialImpl(std::vector<ModuleRef> modules,
                                                                             const SequentialOptions& options)
    : ProbabilisticTensorDictSequentialImpl(ptrs_of(modules), {}, options) {}

ProbabilisticTensorDictSequentialImpl::ProbabilisticTensorDictSequentialImpl(NamedModules modules,
                                                                             const SequentialOptions& options)
    : ProbabilisticTensorDictSequentialImpl(ptrs_of(modules), names_of(modules), options) {}

void ProbabilisticTensorDictSequentialImpl::check_modules(const std::vector<ModulePtr>& modules) const {
  TensorDictSequentialImpl::check_modules(modules);
  if (modules.empty()) throw ValueError("ProbabilisticTensorDictSequential: no modules");
  if (!std::dynamic_pointer_cast<ProbabilisticTensorDictModuleImpl>(modules.back())) {
    throw ValueError(fmt::format(
        "ProbabilisticTensorDictSequential: the last module must be a ProbabilisticTensorDictModule, got {}",
        modules.back()->type_name()));
  }
}

void ProbabilisticTensorDictSequentialImpl::modules_changed() {
  last_ = std::dynamic_pointer_cast<ProbabilisticTensorDictModuleImpl>(modules_.back());
  det_out_keys_ = compute_in_and_out_keys(std::vector<ModulePtr>(modules_.begin(), modules_.end() - 1)).second;
  requires_sample_ = !text::contains_key(det_out_keys_, last_->dist_sample_keys()[0]);
}

TensorDict ProbabilisticTensorDictSequentialImpl::run_det(const TensorDict& td) {
  InteractionTypeGuard guard(interaction_type().value_or(last_->default_interaction_type()));
  TensorDict current = td;
  for (std::size_t i = 0; i + 1 < modules_.size(); ++i) current = run_module(*modules_[i], current);
  return current;
}

TensorDict ProbabilisticTensorDictSequentialImpl::get_dist_params(const TensorDict& td,
                                                                      const std::optional<TensorDict>& out) {
  return run_into(td, out, det_out_keys_,
                  [this](const TensorDict& t, const std::optional<TensorDict>&) { return run_det(t); });
}

std::shared_ptr<Distribution> ProbabilisticTensorDictSequentialImpl::get_dist(const TensorDict& td) {
  return build_dist_from_params(get_dist_params(td));
}

std::shared_ptr<Distribution> ProbabilisticTensorDictSequentialImpl::build_dist_from_params(
    const TensorDict& td) const {
  return last_->get_dist(td);
}

at::Tensor ProbabilisticTensorDictSequentialImpl::log_prob(const TensorDict& td) {
  return last_->log_prob(td, *get_dist(td));
}

namespace {
// Calls f on each probabilistic module of `modules` (a nested sequence's
// through its own method), the last module first.
template <class F>
void each_probabilistic(const std::vector<ModulePtr>& modules, F&& f) {
  for (auto it = modules.rbegin(); it != modules.rend(); ++it) {
    if (const auto* module = dynamic_cast<const ProbabilisticTensorDictModuleImpl*>(it->get())) {
      f(*module);
    } else if (const auto* seq = dynamic_cast<const ProbabilisticTensorDictSequentialImpl*>(it->get())) {
      f(*seq);
    }
  }
}

void extend(Keys& keys, const Keys& more) { keys.insert(keys.end(), more.begin(), more.end()); }
}  // namespace

Keys ProbabilisticTensorDictSequentialImpl::log_prob_keys() const {
  Keys keys;
  each_probabilistic(modules_, [&](const auto& m) { extend(keys, m.log_prob_keys()); });
  return keys;
}

NestedKey ProbabilisticTensorDictSequentialImpl::log_prob_key() const {
  const Keys keys = log_prob_keys();
  if (keys.size() == 1) return keys[0];
  throw RuntimeError(
      fmt::format("log_prob_key needs exactly one log-probability key, got {}. "
                  "Use log_prob_keys instead.",
                  text::keys_repr(keys)));
}

Keys ProbabilisticTensorDictSequentialImpl::dist_sample_keys() const {
  Keys keys;
  each_probabilistic(modules_, [&](const auto& m) { extend(keys, m.dist_sample_keys()); });
  return keys;
}

Keys ProbabilisticTensorDictSequentialImpl::dist_params_keys() const {
  Keys keys;
  each_probabilistic(modules_, [&](const auto& m) { extend(keys, m.dist_params_keys()); });
  return keys;
}

std::vector<int64_t> ProbabilisticTensorDictSequentialImpl::num_samples() const {
  // Each module's dims go in front of those of the modules before it.
  std::vector<int64_t> dims;
  each_probabilistic(modules_, [&](const auto& m) {
    const std::vector<int64_t> own = m.num_samples();
    dims.insert(dims.end(), own.begin(), own.end());
  });
  return dims;
}

TensorDict ProbabilisticTensorDictSequentialImpl::execute(const TensorDict& td) {
  return last_->run(run_det(td), std::nullopt, requires_sample_);
}

std::shared_ptr<TensorDictSequentialImpl> ProbabilisticTensorDictSequentialImpl::make_like(
    std::vector<ModulePtr> modules, std::vector<std::string> names) const {
  // Without its distribution, the chain is a plain sequence (tensordict
  // raises here).
  if (modules.empty() || !std::dynamic_pointer_cast<ProbabilisticTensorDictModuleImpl>(modules.back())) {
    return TensorDictSequentialImpl::make_like(std::move(modules), std::move(names));
  }
  return std::shared_ptr<TensorDictSequentialImpl>(
      new ProbabilisticTensorDictSequentialImpl(std::move(modules), std::move(names),
                                                {.partial_tolerant = partial_tolerant_, .inplace = inplace_}));
}

}  // namespace tensordict::nn
