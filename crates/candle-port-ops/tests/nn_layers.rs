//! The `nn` layers: built through a `VarBuilder` from torch's `weight` / `bias` (the shared
//! vectors' tensors), they give torch's outputs and input gradients; pools and `Upsample` are
//! their functions as `Module`s.

mod common;

use std::collections::HashMap;

use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{VarBuilder, VarMap};
use candle_port_ops::nn as port_nn;
use candle_port_ops::{Conv, Interpolate, Mode, Pool};
use common::{assert_close, assert_input_gradient, conv_of, load_family, operand_names, Case};

/// The layer for a convolution case, its weight and bias given to the builder as torch's
/// `state_dict` entries `layer.weight` / `layer.bias`.
fn layer_of(case: &Case) -> Result<Box<dyn Module>> {
    let w = case.tensor("weight");
    let has_bias = operand_names(case).iter().any(|n| n == "bias");
    let mut tensors = HashMap::from([("layer.weight".to_string(), w.clone())]);
    if has_bias {
        tensors.insert("layer.bias".to_string(), case.tensor("bias").clone());
    }
    let vb = VarBuilder::from_tensors(tensors, case.dtype, &Device::Cpu).pp("layer");
    let dims = w.dims();
    let kernel = &dims[2..];
    let nd = kernel.len();
    let cfg: Conv = conv_of(case, nd);
    let g = cfg.groups;
    // torch's layouts: (out, in / g, *k) for a convolution, (in, out / g, *k) transposed.
    let (conv_io, transposed_io) = ((dims[1] * g, dims[0]), (dims[0], dims[1] * g));
    Ok(match (case.op.as_str(), has_bias) {
        ("conv1d", true) => Box::new(port_nn::conv1d(conv_io.0, conv_io.1, kernel, cfg, vb)?),
        ("conv1d", false) => Box::new(port_nn::conv1d_no_bias(
            conv_io.0, conv_io.1, kernel, cfg, vb,
        )?),
        ("conv3d", true) => Box::new(port_nn::conv3d(conv_io.0, conv_io.1, kernel, cfg, vb)?),
        ("conv3d", false) => Box::new(port_nn::conv3d_no_bias(
            conv_io.0, conv_io.1, kernel, cfg, vb,
        )?),
        ("conv_transpose1d", true) => Box::new(port_nn::conv_transpose1d(
            transposed_io.0,
            transposed_io.1,
            kernel,
            cfg,
            vb,
        )?),
        ("conv_transpose1d", false) => Box::new(port_nn::conv_transpose1d_no_bias(
            transposed_io.0,
            transposed_io.1,
            kernel,
            cfg,
            vb,
        )?),
        ("conv_transpose2d", true) => Box::new(port_nn::conv_transpose2d(
            transposed_io.0,
            transposed_io.1,
            kernel,
            cfg,
            vb,
        )?),
        ("conv_transpose2d", false) => Box::new(port_nn::conv_transpose2d_no_bias(
            transposed_io.0,
            transposed_io.1,
            kernel,
            cfg,
            vb,
        )?),
        ("conv_transpose3d", true) => Box::new(port_nn::conv_transpose3d(
            transposed_io.0,
            transposed_io.1,
            kernel,
            cfg,
            vb,
        )?),
        ("conv_transpose3d", false) => Box::new(port_nn::conv_transpose3d_no_bias(
            transposed_io.0,
            transposed_io.1,
            kernel,
            cfg,
            vb,
        )?),
        (other, _) => panic!("{}: op {other}", case.id),
    })
}

#[test]
fn conv_layers_from_a_var_builder_give_torchs_output_and_input_gradient() -> Result<()> {
    let mut checked = 0;
    for family in ["conv1d", "transposed_conv", "volumetric"] {
        for case in load_family(family) {
            if !case.op.starts_with("conv") {
                continue;
            }
            let layer = layer_of(&case)?;
            let x = case.input_var();
            let out = layer.forward(x.as_tensor())?;
            assert_close(&case, "output", &out, case.tensor("output"));
            assert_input_gradient(&case, &x, &out);
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} convolution cases");
    Ok(())
}

#[test]
fn builders_create_torch_named_weights_of_torch_shapes() -> Result<()> {
    let map = VarMap::new();
    let vb = VarBuilder::from_varmap(&map, DType::F32, &Device::Cpu);
    let cfg = Conv::new().groups(2);
    port_nn::conv3d(4, 6, &[3, 1, 2], cfg.clone(), vb.pp("c3"))?;
    port_nn::conv_transpose2d_no_bias(4, 6, &[3], cfg, vb.pp("t2"))?;
    let shapes: HashMap<String, Vec<usize>> = map
        .data()
        .lock()
        .expect("varmap lock")
        .iter()
        .map(|(name, var)| (name.clone(), var.dims().to_vec()))
        .collect();
    let want = HashMap::from([
        ("c3.weight".to_string(), vec![6, 2, 3, 1, 2]),
        ("c3.bias".to_string(), vec![6]),
        ("t2.weight".to_string(), vec![4, 3, 3, 3]),
    ]);
    assert_eq!(shapes, want);
    // torch's default init: uniform in +-1 / sqrt(fan_in), fan_in = 2 * 3 * 1 * 2 = 12.
    let bound = 1.0 / 12f64.sqrt();
    let w = map.data().lock().expect("varmap lock")["c3.weight"]
        .as_tensor()
        .to_dtype(DType::F64)?;
    let largest = w.abs()?.max_all()?.to_scalar::<f64>()?;
    assert!(
        largest <= bound && largest > bound / 2.0,
        "{largest} vs {bound}"
    );
    Ok(())
}

#[test]
fn builders_refuse_channels_that_do_not_split_into_groups_and_bad_kernels() {
    let map = VarMap::new();
    let vb = VarBuilder::from_varmap(&map, DType::F32, &Device::Cpu);
    let err = port_nn::conv3d(3, 6, &[3], Conv::new().groups(2), vb.pp("a")).expect_err("groups");
    assert!(err.to_string().contains("divisible by groups"), "{err}");
    let err = port_nn::conv_transpose2d(4, 6, &[3, 3, 3], Conv::new(), vb.pp("b")).expect_err("k");
    assert!(err.to_string().contains("expected 1 or 2 entries"), "{err}");
}

#[test]
fn pool_and_upsample_layers_are_their_functions() -> Result<()> {
    let x4 = Tensor::randn(0f32, 1., (2, 3, 9, 11), &Device::Cpu)?;
    let x5 = Tensor::randn(0f32, 1., (1, 2, 5, 6, 7), &Device::Cpu)?;
    let x3 = Tensor::randn(0f32, 1., (2, 3, 13), &Device::Cpu)?;
    let pool = Pool::new(&[3]).stride(&[2]).padding(&[1]);
    let up = Interpolate::scale(&[2.0], Mode::Bilinear).align_corners(false);
    let pairs: Vec<(Tensor, Tensor)> = vec![
        (
            x4.apply(&port_nn::MaxPool2d::new(pool.clone()))?,
            candle_port_ops::max_pool2d(&x4, &pool)?,
        ),
        (
            x4.apply(&port_nn::AvgPool2d::new(pool.clone()))?,
            candle_port_ops::avg_pool2d(&x4, &pool)?,
        ),
        (
            x3.apply(&port_nn::MaxPool1d::new(pool.clone()))?,
            candle_port_ops::max_pool1d(&x3, &pool)?,
        ),
        (
            x3.apply(&port_nn::AvgPool1d::new(pool.clone()))?,
            candle_port_ops::avg_pool1d(&x3, &pool)?,
        ),
        (
            x5.apply(&port_nn::MaxPool3d::new(pool.clone()))?,
            candle_port_ops::max_pool3d(&x5, &pool)?,
        ),
        (
            x5.apply(&port_nn::AvgPool3d::new(pool.clone()))?,
            candle_port_ops::avg_pool3d(&x5, &pool)?,
        ),
        (
            x4.apply(&port_nn::AdaptiveAvgPool2d::new((4, 3)))?,
            candle_port_ops::adaptive_avg_pool2d(&x4, (4, 3))?,
        ),
        (
            x4.apply(&port_nn::AdaptiveMaxPool2d::new((4, 3)))?,
            candle_port_ops::adaptive_max_pool2d(&x4, (4, 3))?,
        ),
        (
            x3.apply(&port_nn::AdaptiveAvgPool1d::new(5))?,
            candle_port_ops::adaptive_avg_pool1d(&x3, 5)?,
        ),
        (
            x3.apply(&port_nn::AdaptiveMaxPool1d::new(5))?,
            candle_port_ops::adaptive_max_pool1d(&x3, 5)?,
        ),
        (
            x5.apply(&port_nn::AdaptiveAvgPool3d::new((2, 3, 4)))?,
            candle_port_ops::adaptive_avg_pool3d(&x5, (2, 3, 4))?,
        ),
        (
            x5.apply(&port_nn::AdaptiveMaxPool3d::new((2, 3, 4)))?,
            candle_port_ops::adaptive_max_pool3d(&x5, (2, 3, 4))?,
        ),
        (
            x4.apply(&port_nn::Upsample::new(up.clone()))?,
            candle_port_ops::interpolate(&x4, &up)?,
        ),
    ];
    for (i, (layer, function)) in pairs.iter().enumerate() {
        assert_eq!(layer.dims(), function.dims(), "pair {i}");
        let diff = (layer - function)?.abs()?.max_all()?.to_scalar::<f32>()?;
        assert_eq!(diff, 0.0, "pair {i}");
    }
    Ok(())
}
