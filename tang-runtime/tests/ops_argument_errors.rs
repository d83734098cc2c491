//! Arguments PyTorch refuses, or that have no one right answer, are refused with an
//! `InvalidArgument` that says what to pass instead: a range whose end lies before its
//! start, segments of a packed tensor that overlap, a tile with a zero dimension, a
//! tensor-core tile the generator does not support (on every device, tensor cores or not).

use tang_runtime::ops::{CoopTile, MatmulOptions, TileConfig, matmul_with};
use tang_runtime::{Error, Tensor, ops};
use tang_testing::devices;

#[test]
fn arange_with_the_end_before_the_start_is_refused_as_pytorch_does() {
    for dev in devices() {
        // torch.arange(10, 0, 1): "upper bound and larger bound inconsistent with step sign"
        let e = ops::arange(&dev, 10, 0, 1).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
        assert!(e.to_string().contains("end 0 is below start 10"), "{e}");
        // An empty range is not an error (torch.arange(5, 5) is empty).
        assert!(ops::arange(&dev, 5, 5, 1).unwrap().is_empty());
        assert_eq!(
            ops::arange(&dev, 5, 7, 3).unwrap().to_vec_u32().unwrap(),
            [5]
        );
    }
}

#[test]
fn pack_refuses_overlapping_segments() {
    for dev in devices() {
        let a = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0], &[3]).unwrap();
        let b = Tensor::from_slice(&dev, &[4.0, 5.0], &[2]).unwrap();
        let flat = Tensor::zeros(&dev, &[6]).unwrap();
        // b at 2 overlaps a's last element (elements 0..3 and 2..4), in either order.
        for (parts, offsets) in [([&a, &b], [0, 2]), ([&b, &a], [2, 0])] {
            let e = ops::pack(&parts, &flat, &offsets).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
            assert!(e.to_string().contains("overlap"), "{e}");
        }
        assert_eq!(flat.to_vec().unwrap(), [0.0; 6], "nothing was written");
        // Touching segments and empty ones anywhere are fine.
        let empty = Tensor::zeros(&dev, &[0]).unwrap();
        ops::pack(&[&a, &empty, &b], &flat, &[0, 1, 3]).unwrap();
        assert_eq!(flat.to_vec().unwrap(), [1.0, 2.0, 3.0, 4.0, 5.0, 0.0]);
        // Reading overlapping segments back out is well defined.
        let (x, y) = (
            Tensor::zeros(&dev, &[3]).unwrap(),
            Tensor::zeros(&dev, &[2]).unwrap(),
        );
        ops::unpack(&flat, &[0, 2], &[&x, &y]).unwrap();
        assert_eq!(y.to_vec().unwrap(), [3.0, 4.0]);
    }
}

#[test]
fn a_forced_tile_with_a_zero_dimension_is_an_invalid_argument() {
    for dev in devices() {
        let a = Tensor::zeros(&dev, &[4, 4]).unwrap();
        for tile in [
            TileConfig {
                bm: 0,
                ..TileConfig::SMALL
            },
            TileConfig {
                bk: 0,
                ..TileConfig::SMALL
            },
            TileConfig {
                tn: 0,
                ..TileConfig::SMALL
            },
            TileConfig {
                tm: 6,
                ..TileConfig::SMALL
            },
        ] {
            let o = MatmulOptions {
                tile: Some(tile),
                ..MatmulOptions::default()
            };
            let e = matmul_with(&a, &a, &o).unwrap_err();
            assert!(
                matches!(e, Error::InvalidArgument { .. }),
                "{tile:?}: {e:?}"
            );
            let text = e.to_string();
            assert!(
                text.contains("TileConfig::PRESETS") && !text.contains("asked for 0"),
                "{text}"
            );
        }
    }
}

#[test]
fn a_forced_coop_tile_the_generator_cannot_build_is_an_invalid_argument() {
    for dev in devices() {
        let a = Tensor::zeros(&dev, &[4, 4]).unwrap();
        for tile in [
            CoopTile {
                sg_m: 0,
                ..CoopTile::DEFAULT
            },
            CoopTile {
                bk: 24,
                ..CoopTile::DEFAULT
            },
            CoopTile {
                stages: 3,
                ..CoopTile::DEFAULT
            },
        ] {
            // f32 operands too: the tile is refused where it is written.
            for f16_inputs in [false, true] {
                let o = MatmulOptions {
                    coop_tile: Some(tile),
                    f16_inputs,
                    ..MatmulOptions::default()
                };
                let e = matmul_with(&a, &a, &o).unwrap_err();
                assert!(
                    matches!(e, Error::InvalidArgument { .. }),
                    "{tile:?}: {e:?}"
                );
                assert!(e.to_string().contains("CoopTile::PRESETS"), "{e}");
            }
        }
        // A supported tile runs (on the tensor cores, or ignored on the f32 tile).
        let o = MatmulOptions {
            coop_tile: Some(CoopTile::PRESETS[1]),
            f16_inputs: true,
            ..MatmulOptions::default()
        };
        assert_eq!(matmul_with(&a, &a, &o).unwrap().shape(), &[4, 4]);
    }
}
