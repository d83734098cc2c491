//! Generator checks of the matmul shaders that need no device.

use super::codegen::{Variant, generate};
use super::*;

/// Every variant of every preset tile passes naga.
#[test]
fn every_variant_validates() {
    let epi = "fn tang_epilogue(x: f32) -> f32 { return max(x, 0.0f); }\n";
    let epi_aux = "fn tang_epilogue(x: f32, y: f32) -> f32 { return x * y; }\n";
    for tile in TileConfig::PRESETS {
        assert!(tile.is_valid(), "{tile:?}");
        for bits in 0..512u32 {
            let v = Variant::from_bits(tile, bits);
            // The other flags are covered on the preset that matters most; `aux`
            // exists only with an epilogue.
            if (tile != TileConfig::LARGE && bits > 32) || (v.aux && !v.epilogue) {
                continue;
            }
            let text = generate(&v, if v.aux { epi_aux } else { epi });
            if let Err(e) = tang_expr::validate(&text) {
                panic!("{v:?}: {e}\n{text}");
            }
        }
    }
}

#[test]
fn invalid_tiles_are_rejected() {
    assert!(
        !TileConfig {
            bm: 128,
            bn: 128,
            bk: 8,
            tm: 6,
            tn: 8
        }
        .is_valid()
    );
    assert!(
        !TileConfig {
            bm: 64,
            bn: 64,
            bk: 4,
            tm: 4,
            tn: 4
        }
        .is_valid()
    );
    assert!(
        !TileConfig {
            bm: 128,
            bn: 128,
            bk: 6,
            tm: 8,
            tn: 8
        }
        .is_valid()
    );
}
