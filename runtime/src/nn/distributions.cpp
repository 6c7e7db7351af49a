// The distributions tensordict.nn's probabilistic modules sample from
// (<tensordict/nn/distributions.h>): Delta, Normal, TanhNormal, Categorical,
// OneHotCategorical, the parameter mappings and NormalParamExtractor.
#include <fmt/format.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <sstream>

#include "nn/shapes.h"
#include "nn/text.h"
#include "tensordict/errors.h"
#include "tensordict/nn/distributions.h"

namespace tensordict::nn {

namespace {

std::string size_repr(at::IntArrayRef sizes) {
  std::string out = "torch.Size([";
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(sizes[i]);
  }
  return out + "])";
}

const at::Tensor& require(const DistParams& params, std::string_view dist, const std::string& name,
                          std::string_view expected) {
  auto it = params.find(name);
  if (it == params.end()) {
    std::string got;
    for (const auto& [k, v] : params) got += (got.empty() ? "" : ", ") + k;
    throw ValueError(fmt::format("{} expects the parameter(s) {}; got {}", dist, expected, got.empty() ? "none" : got));
  }
  return it->second;
}

void expect_only(const DistParams& params, std::string_view dist, std::initializer_list<std::string_view> names,
                 std::string_view expected) {
  for (const auto& [k, v] : params) {
    if (std::find(names.begin(), names.end(), k) == names.end()) {
      throw ValueError(fmt::format("{} expects the parameter(s) {}; got an unknown one: {}", dist, expected, k));
    }
  }
}

}  // namespace

// ---- Distribution ----------------------------------------------------------------

Distribution::Distribution(std::vector<int64_t> batch_shape, std::vector<int64_t> event_shape)
    : batch_shape_(std::move(batch_shape)), event_shape_(std::move(event_shape)) {}

std::vector<int64_t> Distribution::extended_shape(at::IntArrayRef sample_shape) const {
  return concat(concat(sample_shape, batch_shape_), event_shape_);
}

void Distribution::not_implemented(std::string_view method) const {
  throw NotImplementedError(fmt::format("{}.{} is not implemented", name(), method));
}

at::Tensor Distribution::sample(at::IntArrayRef sample_shape) const {
  if (!has_rsample()) not_implemented("sample");
  torch::NoGradGuard no_grad;
  return rsample(sample_shape).detach();
}
at::Tensor Distribution::rsample(at::IntArrayRef) const { not_implemented("rsample"); }
at::Tensor Distribution::mode() const { not_implemented("mode"); }
at::Tensor Distribution::mean() const { not_implemented("mean"); }
at::Tensor Distribution::median() const { not_implemented("median"); }
at::Tensor Distribution::stddev() const { not_implemented("stddev"); }
at::Tensor Distribution::entropy() const { not_implemented("entropy"); }

std::string Distribution::repr() const {
  std::string out = std::string(name()) + "(";
  bool first = true;
  for (const auto& [k, v] : params()) {
    out += fmt::format("{}{}: {}", first ? "" : ", ", k, size_repr(v.sizes()));
    first = false;
  }
  return out + ")";
}

std::ostream& operator<<(std::ostream& os, const Distribution& dist) { return os << dist.repr(); }

// ---- Delta -----------------------------------------------------------------------

namespace {
std::vector<int64_t> leading(const at::Tensor& t, int64_t event_dims) {
  auto s = t.sizes();
  return std::vector<int64_t>(s.begin(), s.end() - event_dims);
}
std::vector<int64_t> trailing(const at::Tensor& t, int64_t event_dims) {
  auto s = t.sizes();
  return std::vector<int64_t>(s.end() - event_dims, s.end());
}
}  // namespace

Delta::Delta(at::Tensor param, double atol, double rtol)
    : Distribution(leading(param, std::min<int64_t>(1, param.dim())), trailing(param, std::min<int64_t>(1, param.dim()))),
      param_(std::move(param)),
      atol_(atol),
      rtol_(rtol) {}

at::Tensor Delta::rsample(at::IntArrayRef sample_shape) const { return param_.expand(extended_shape(sample_shape)); }

at::Tensor Delta::log_prob(const at::Tensor& value) const {
  at::Tensor is_equal = (value - param_).abs() <= atol_ + rtol_ * param_.abs();
  for (std::size_t i = 0; i < event_shape_.size(); ++i) is_equal = is_equal.all(-1);
  const auto dtype = value.is_floating_point() ? value.scalar_type() : param_.scalar_type();
  return at::zeros(is_equal.sizes(), value.options().dtype(dtype))
      .masked_fill(is_equal.logical_not(), -std::numeric_limits<double>::infinity());
}

DistributionClass Delta::cls(double atol, double rtol) {
  return {"Delta", [atol, rtol](const DistParams& p) -> std::shared_ptr<Distribution> {
            expect_only(p, "Delta", {"param"}, "param");
            return std::make_shared<Delta>(require(p, "Delta", "param", "param"), atol, rtol);
          }};
}

// ---- Normal ----------------------------------------------------------------------

namespace {
std::pair<at::Tensor, at::Tensor> broadcast(const at::Tensor& a, const at::Tensor& b) {
  auto both = at::broadcast_tensors({a, b});
  return {both[0], both[1]};
}
constexpr double kHalfLog2Pi = 0.91893853320467274178;  // 0.5 * log(2 pi)
}  // namespace

Normal::Normal(at::Tensor loc, at::Tensor scale) : Distribution({}, {}) {
  std::tie(loc_, scale_) = broadcast(loc, scale);
  batch_shape_ = loc_.sizes().vec();
}

at::Tensor Normal::sample(at::IntArrayRef sample_shape) const {
  torch::NoGradGuard no_grad;
  const auto shape = extended_shape(sample_shape);
  return at::normal(loc_.expand(shape), scale_.expand(shape));
}

at::Tensor Normal::rsample(at::IntArrayRef sample_shape) const {
  const auto eps = at::randn(extended_shape(sample_shape), loc_.options());
  return loc_ + eps * scale_;
}

at::Tensor Normal::log_prob(const at::Tensor& value) const {
  const auto z = (value - loc_) / scale_;
  return -0.5 * z * z - scale_.log() - kHalfLog2Pi;
}

at::Tensor Normal::entropy() const { return 0.5 + kHalfLog2Pi + scale_.log(); }

DistributionClass Normal::cls() {
  return {"Normal", [](const DistParams& p) -> std::shared_ptr<Distribution> {
            expect_only(p, "Normal", {"loc", "scale"}, "loc, scale");
            return std::make_shared<Normal>(require(p, "Normal", "loc", "loc, scale"),
                                            require(p, "Normal", "scale", "loc, scale"));
          }};
}

// ---- TanhNormal ------------------------------------------------------------------

namespace {
at::Tensor squash_loc(const at::Tensor& loc, const TanhNormal::Options& o) {
  return o.tanh_loc ? (loc / o.upscale).tanh() * o.upscale : loc;
}
}  // namespace

TanhNormal::TanhNormal(at::Tensor loc, at::Tensor scale, Options options)
    : Distribution({}, {}), base_(squash_loc(loc, options), scale), options_(options) {
  if (!(options_.high > options_.low)) {
    throw ValueError(fmt::format("TanhNormal: high ({}) must exceed low ({})", options_.high, options_.low));
  }
  const at::Tensor& l = base_.loc();
  event_dims_ = options_.event_dims.value_or(std::min<int64_t>(1, l.dim()));
  if (event_dims_ < 0 || event_dims_ > l.dim()) {
    throw ValueError(fmt::format("TanhNormal: event_dims {} for a loc of {} dims", event_dims_, l.dim()));
  }
  batch_shape_ = leading(l, event_dims_);
  event_shape_ = trailing(l, event_dims_);
}

at::Tensor TanhNormal::squash(const at::Tensor& x) const {
  const double center = 0.5 * (options_.high + options_.low);
  const double half = 0.5 * (options_.high - options_.low);
  return x.tanh() * half + center;
}

at::Tensor TanhNormal::rsample(at::IntArrayRef sample_shape) const { return squash(base_.rsample(sample_shape)); }

at::Tensor TanhNormal::log_prob(const at::Tensor& value) const {
  const double center = 0.5 * (options_.high + options_.low);
  const double half = 0.5 * (options_.high - options_.low);
  const double eps = value.scalar_type() == at::kDouble ? std::numeric_limits<double>::epsilon()
                                                        : std::numeric_limits<float>::epsilon();
  const auto t = ((value - center) / half).clamp(-1.0 + eps, 1.0 - eps);
  const auto x = t.atanh();
  // log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2x)): no cancellation near |t| = 1.
  const auto log_det = 2.0 * (std::numbers::ln2 - x - at::softplus(-2.0 * x));
  at::Tensor lp = base_.log_prob(x) - log_det - std::log(half);
  for (int64_t i = 0; i < event_dims_; ++i) lp = lp.sum(-1);
  return lp;
}

at::Tensor TanhNormal::mode() const { return squash(base_.loc()); }

DistributionClass TanhNormal::cls(Options options) {
  return {"TanhNormal", [options](const DistParams& p) -> std::shared_ptr<Distribution> {
            expect_only(p, "TanhNormal", {"loc", "scale"}, "loc, scale");
            return std::make_shared<TanhNormal>(require(p, "TanhNormal", "loc", "loc, scale"),
                                                require(p, "TanhNormal", "scale", "loc, scale"), options);
          }};
}

// ---- Categorical -----------------------------------------------------------------

Categorical::Categorical(const at::Tensor& logits_or_probs, const Options& options) : Distribution({}, {}) {
  const bool is_logits = !options.probs;
  if (logits_or_probs.dim() < 1) throw ValueError(fmt::format("{}: logits/probs need at least one dim", name()));
  if (is_logits) {
    logits_ = logits_or_probs - logits_or_probs.logsumexp(-1, /*keepdim=*/true);
    probs_ = logits_.exp();
  } else {
    probs_ = logits_or_probs / logits_or_probs.sum(-1, /*keepdim=*/true);
    const double tiny = logits_or_probs.scalar_type() == at::kDouble ? std::numeric_limits<double>::min()
                                                                      : std::numeric_limits<float>::min();
    logits_ = probs_.clamp_min(tiny).log();
  }
  batch_shape_ = leading(logits_, 1);
}

at::Tensor Categorical::sample_indices(at::IntArrayRef sample_shape) const {
  torch::NoGradGuard no_grad;
  int64_t n = 1;
  for (auto s : sample_shape) n *= s;
  const int64_t k = num_categories();
  const auto flat = probs_.reshape({-1, k});
  at::Tensor idx = at::multinomial(flat, n, /*replacement=*/true);  // [B, n]
  return idx.t().reshape(concat(sample_shape, batch_shape_));
}

at::Tensor Categorical::sample(at::IntArrayRef sample_shape) const { return sample_indices(sample_shape); }

at::Tensor Categorical::log_prob(const at::Tensor& value) const {
  auto both = at::broadcast_tensors({value.to(at::kLong).unsqueeze(-1), logits_});
  return both[1].gather(-1, both[0].narrow(-1, 0, 1)).squeeze(-1);
}

at::Tensor Categorical::mode() const { return probs_.argmax(-1); }

at::Tensor Categorical::entropy() const {
  const double lowest = logits_.scalar_type() == at::kDouble ? std::numeric_limits<double>::lowest()
                                                             : std::numeric_limits<float>::lowest();
  return -(logits_.clamp_min(lowest) * probs_).sum(-1);
}

namespace {
std::pair<at::Tensor, bool> logits_or_probs(const DistParams& p, std::string_view dist) {
  expect_only(p, dist, {"logits", "probs"}, "logits or probs");
  const bool has_logits = p.count("logits") > 0, has_probs = p.count("probs") > 0;
  if (has_logits == has_probs) {
    throw ValueError(fmt::format("{} expects exactly one of the parameters logits, probs", dist));
  }
  return has_logits ? std::pair{p.at("logits"), true} : std::pair{p.at("probs"), false};
}
}  // namespace

DistributionClass Categorical::cls() {
  return {"Categorical", [](const DistParams& p) -> std::shared_ptr<Distribution> {
            auto [t, is_logits] = logits_or_probs(p, "Categorical");
            return std::make_shared<Categorical>(t, Categorical::Options{.probs = !is_logits});
          }};
}

OneHotCategorical::OneHotCategorical(const at::Tensor& logits_or_probs, const Options& options)
    : Categorical(logits_or_probs, options) {
  event_shape_ = {num_categories()};
}

at::Tensor OneHotCategorical::sample(at::IntArrayRef sample_shape) const {
  return at::one_hot(sample_indices(sample_shape), num_categories()).to(probs_.scalar_type());
}

at::Tensor OneHotCategorical::log_prob(const at::Tensor& value) const { return Categorical::log_prob(value.argmax(-1)); }

at::Tensor OneHotCategorical::mode() const {
  return at::one_hot(probs_.argmax(-1), num_categories()).to(probs_.scalar_type());
}

DistributionClass OneHotCategorical::cls() {
  return {"OneHotCategorical", [](const DistParams& p) -> std::shared_ptr<Distribution> {
            auto [t, is_logits] = logits_or_probs(p, "OneHotCategorical");
            return std::make_shared<OneHotCategorical>(t, Categorical::Options{.probs = !is_logits});
          }};
}

// ---- mappings and NormalParamExtractor -------------------------------------------

double inv_softplus(double x) { return std::log(std::max(std::expm1(x), 1e-6)); }

at::Tensor biased_softplus(const at::Tensor& x, double bias, double min_val) {
  return at::softplus(x + inv_softplus(bias - min_val)) + min_val;
}

std::function<at::Tensor(const at::Tensor&)> mapping(const std::string& name) {
  if (name == "softplus") return [](const at::Tensor& x) { return at::softplus(x); };
  if (name == "exp") return [](const at::Tensor& x) { return x.exp(); };
  if (name == "relu") return [](const at::Tensor& x) { return x.relu(); };
  if (name == "none") return [](const at::Tensor& x) { return x; };
  const std::string prefix = "biased_softplus";
  if (name.rfind(prefix, 0) == 0) {
    double bias = 1.0, min_val = 0.01;
    std::string rest = name.substr(prefix.size());
    try {
      if (!rest.empty()) {
        if (rest[0] != '_') throw ValueError("");
        rest = rest.substr(1);
        const auto sep = rest.find('_');
        bias = std::stod(rest.substr(0, sep));
        if (sep != std::string::npos) min_val = std::stod(rest.substr(sep + 1));
      }
    } catch (const std::exception&) {
      throw ValueError(fmt::format("Invalid mapping {}: expected biased_softplus_<bias>[_<min_val>]", name));
    }
    return [bias, min_val](const at::Tensor& x) { return biased_softplus(x, bias, min_val); };
  }
  throw ValueError(
      fmt::format("Unknown mapping {} (softplus, exp, relu, none, biased_softplus[_<bias>[_<min_val>]])", name));
}

NormalParamExtractorImpl::NormalParamExtractorImpl(std::string scale_mapping, double scale_lb)
    : scale_mapping_name_(std::move(scale_mapping)), scale_mapping_(mapping(scale_mapping_name_)), scale_lb_(scale_lb) {}

std::tuple<at::Tensor, at::Tensor> NormalParamExtractorImpl::forward(const at::Tensor& x) {
  if (x.dim() < 1 || x.size(-1) % 2 != 0) {
    throw ValueError(
        fmt::format("NormalParamExtractor: the last dim must be even, got shape {}", size_repr(x.sizes())));
  }
  auto parts = x.chunk(2, -1);
  return {parts[0], scale_mapping_(parts[1]).clamp_min(scale_lb_)};
}

void NormalParamExtractorImpl::pretty_print(std::ostream& stream) const {
  stream << "NormalParamExtractor(scale_mapping=" << scale_mapping_name_ << ", scale_lb=" << scale_lb_ << ")";
}

}  // namespace tensordict::nn
