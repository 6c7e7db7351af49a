// Distributions for probabilistic modules, on libtorch (which has none):
// Delta, Normal, TanhNormal, Categorical, OneHotCategorical, with the
// semantics of torch.distributions / tensordict.nn.distributions; and
// NormalParamExtractor.
#pragma once

#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "tensordict/nn/module.h"

namespace tensordict::nn {

// Shapes follow torch.distributions: a sample has shape
// sample_shape + batch_shape + event_shape; log_prob reduces the event dims.
// A method a distribution does not define throws NotImplementedError.
class Distribution {
 public:
  virtual ~Distribution() = default;

  virtual std::string_view name() const = 0;
  const std::vector<int64_t>& batch_shape() const { return batch_shape_; }
  const std::vector<int64_t>& event_shape() const { return event_shape_; }

  // True when rsample (reparameterized, differentiable) is defined.
  virtual bool has_rsample() const { return false; }
  // Without gradient; the default detaches rsample().
  virtual at::Tensor sample(at::IntArrayRef sample_shape = {}) const;
  virtual at::Tensor rsample(at::IntArrayRef sample_shape = {}) const;
  virtual at::Tensor log_prob(const at::Tensor& value) const = 0;
  virtual at::Tensor mode() const;
  virtual at::Tensor mean() const;
  virtual at::Tensor median() const;
  virtual at::Tensor stddev() const;
  virtual at::Tensor entropy() const;

  // "Normal(loc: torch.Size([3, 4]), scale: torch.Size([3, 4]))".
  virtual std::string repr() const;

 protected:
  Distribution(std::vector<int64_t> batch_shape, std::vector<int64_t> event_shape);
  std::vector<int64_t> extended_shape(at::IntArrayRef sample_shape) const;
  [[noreturn]] void not_implemented(std::string_view method) const;
  // The parameters the repr lists.
  virtual std::vector<std::pair<std::string, at::Tensor>> params() const = 0;

  std::vector<int64_t> batch_shape_;
  std::vector<int64_t> event_shape_;
};

std::ostream& operator<<(std::ostream& os, const Distribution& dist);

// Parameters by name ("loc", "scale", ...), as read from a tensordict.
using DistParams = std::map<std::string, at::Tensor>;

class CompositeDistribution;

// What ProbabilisticTensorDictModule builds (tensordict's distribution_class
// plus distribution_kwargs).
struct DistributionClass {
  std::string name;
  std::function<std::shared_ptr<Distribution>(const DistParams&)> make;
  // Set instead of `make` by CompositeDistribution::cls: the module builds
  // the distribution from the tensordict at its one in_key.
  std::function<std::shared_ptr<CompositeDistribution>(const TensorDict&)> make_composite = nullptr;
  // The keys the composite's samples go to: the module's out_keys when it
  // is given none.
  Keys composite_sample_keys = {};
};

// A point mass at `param` (tensordict's Delta): log_prob is 0 where a value
// matches param within atol + rtol * |param| (over the event dims), -inf
// elsewhere. batch_shape = param.shape[:-1], event_shape = param.shape[-1:].
class Delta : public Distribution {
 public:
  explicit Delta(at::Tensor param, double atol = 1e-6, double rtol = 1e-6);
  std::string_view name() const override { return "Delta"; }
  bool has_rsample() const override { return true; }
  at::Tensor rsample(at::IntArrayRef sample_shape = {}) const override;
  at::Tensor log_prob(const at::Tensor& value) const override;
  at::Tensor mode() const override { return param_; }
  at::Tensor mean() const override { return param_; }
  at::Tensor median() const override { return param_; }
  const at::Tensor& param() const { return param_; }
  // Parameter "param".
  static DistributionClass cls(double atol = 1e-6, double rtol = 1e-6);

 protected:
  std::vector<std::pair<std::string, at::Tensor>> params() const override { return {{"param", param_}}; }

 private:
  at::Tensor param_;
  double atol_, rtol_;
};

class Normal : public Distribution {
 public:
  Normal(at::Tensor loc, at::Tensor scale);
  std::string_view name() const override { return "Normal"; }
  bool has_rsample() const override { return true; }
  at::Tensor sample(at::IntArrayRef sample_shape = {}) const override;
  at::Tensor rsample(at::IntArrayRef sample_shape = {}) const override;
  at::Tensor log_prob(const at::Tensor& value) const override;
  at::Tensor mode() const override { return loc_; }
  at::Tensor mean() const override { return loc_; }
  at::Tensor median() const override { return loc_; }
  at::Tensor stddev() const override { return scale_; }
  at::Tensor entropy() const override;
  const at::Tensor& loc() const { return loc_; }
  const at::Tensor& scale() const { return scale_; }
  // Parameters "loc", "scale".
  static DistributionClass cls();

 protected:
  std::vector<std::pair<std::string, at::Tensor>> params() const override {
    return {{"loc", loc_}, {"scale", scale_}};
  }

 private:
  at::Tensor loc_, scale_;
};

// tanh of a Normal, mapped affinely onto (low, high); the last `event_dims`
// dims are event dims (log_prob sums them), 1 by default (0 for a scalar
// loc). With tanh_loc, loc is first squashed as upscale * tanh(loc / upscale).
// mode and median are the image of loc; the mean has no closed form
// (NotImplementedError: probabilistic modules estimate it from samples).
class TanhNormal : public Distribution {
 public:
  // TanhNormal::Options{.low = -2, .high = 2}
  struct Options {
    double low = -1.0;
    double high = 1.0;
    double upscale = 5.0;
    bool tanh_loc = false;
    std::optional<int64_t> event_dims = std::nullopt;
  };
  TanhNormal(at::Tensor loc, at::Tensor scale, Options options);
  TanhNormal(at::Tensor loc, at::Tensor scale) : TanhNormal(std::move(loc), std::move(scale), Options{}) {}
  std::string_view name() const override { return "TanhNormal"; }
  bool has_rsample() const override { return true; }
  at::Tensor rsample(at::IntArrayRef sample_shape = {}) const override;
  at::Tensor log_prob(const at::Tensor& value) const override;
  at::Tensor mode() const override;
  at::Tensor median() const override { return mode(); }
  const Normal& base() const { return base_; }
  static DistributionClass cls(Options options);
  static DistributionClass cls() { return cls(Options{}); }

 protected:
  std::vector<std::pair<std::string, at::Tensor>> params() const override {
    return {{"loc", base_.loc()}, {"scale", base_.scale()}};
  }

 private:
  at::Tensor squash(const at::Tensor& x) const;
  Normal base_;
  Options options_;
  int64_t event_dims_;
};

struct CategoricalOptions {
  // The tensor holds probabilities (normalized here), not logits.
  bool probs = false;
};

// A categorical over the last dim of `logits` (or `probs`); samples are
// indices (int64). log_prob uses log_softmax.
class Categorical : public Distribution {
 public:
  using Options = CategoricalOptions;
  // Categorical(probs, {.probs = true})
  Categorical(const at::Tensor& logits_or_probs, const Options& options = {});
  std::string_view name() const override { return "Categorical"; }
  at::Tensor sample(at::IntArrayRef sample_shape = {}) const override;
  at::Tensor log_prob(const at::Tensor& value) const override;
  at::Tensor mode() const override;
  at::Tensor entropy() const override;
  const at::Tensor& logits() const { return logits_; }
  const at::Tensor& probs() const { return probs_; }
  int64_t num_categories() const { return logits_.size(-1); }
  // Parameter "logits" or "probs".
  static DistributionClass cls();

 protected:
  std::vector<std::pair<std::string, at::Tensor>> params() const override { return {{"logits", logits_}}; }
  // Indices of shape sample_shape + batch_shape.
  at::Tensor sample_indices(at::IntArrayRef sample_shape) const;

  at::Tensor logits_;  // normalized: logsumexp over the last dim is 0
  at::Tensor probs_;
};

// The same, with one-hot samples (event_shape = [num_categories]).
class OneHotCategorical : public Categorical {
 public:
  OneHotCategorical(const at::Tensor& logits_or_probs, const Options& options = {});
  std::string_view name() const override { return "OneHotCategorical"; }
  at::Tensor sample(at::IntArrayRef sample_shape = {}) const override;
  at::Tensor log_prob(const at::Tensor& value) const override;
  at::Tensor mode() const override;
  at::Tensor mean() const override { return probs_; }
  // sqrt(p (1 - p)) per category, as torch's OneHotCategorical.
  at::Tensor stddev() const override { return (probs_ * (1 - probs_)).sqrt(); }
  static DistributionClass cls();
};

// tensordict's inv_softplus: log(expm1(x)) (expm1 clamped at 1e-6).
double inv_softplus(double x);
// tensordict's biased_softplus: softplus(x + inv_softplus(bias - min_val)) +
// min_val, so that 0 maps to `bias` and the result stays above min_val.
at::Tensor biased_softplus(const at::Tensor& x, double bias, double min_val = 0.01);
// tensordict's mappings(): "softplus", "exp", "relu", "biased_softplus"
// (bias 1), "biased_softplus_<bias>", "biased_softplus_<bias>_<min_val>",
// "none". ValueError for another name.
std::function<at::Tensor(const at::Tensor&)> mapping(const std::string& name);

// Splits the last dim into (loc, scale), scale = mapping(second half)
// clamped at scale_lb.
class NormalParamExtractorImpl : public torch::nn::Module {
 public:
  explicit NormalParamExtractorImpl(std::string scale_mapping = "biased_softplus_1.0", double scale_lb = 1e-4);
  std::tuple<at::Tensor, at::Tensor> forward(const at::Tensor& x);
  void pretty_print(std::ostream& stream) const override;

 private:
  std::string scale_mapping_name_;
  std::function<at::Tensor(const at::Tensor&)> scale_mapping_;
  double scale_lb_;
};
TORCH_MODULE(NormalParamExtractor);

}  // namespace tensordict::nn
